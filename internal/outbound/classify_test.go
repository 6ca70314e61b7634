package outbound

import "testing"

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code              int
		enhanced, message string
		wantType, wantSub string
	}{
		{550, "5.1.1", "No such user here", BounceHard, SubtypeMailboxUnavailable},
		{550, "", "5.1.1 <x@y>: Recipient address rejected: User unknown", BounceHard, SubtypeMailboxUnavailable},
		{550, "5.1.10", "RESOLVER.ADR.RecipientNotFound", BounceHard, SubtypeDNSFailure},
		{552, "5.2.2", "Mailbox full", BounceSoft, SubtypeMailboxFull},
		{452, "4.2.2", "The email account that you tried to reach is over quota", BounceSoft, SubtypeMailboxFull},
		{550, "5.0.0", "mailbox is full", BounceSoft, SubtypeMailboxFull},
		{552, "5.3.4", "Message size exceeds fixed limit", BounceHard, SubtypeMessageTooLarge},
		{550, "5.7.1", "Message rejected due to local policy", BounceHard, SubtypePolicy},
		{550, "5.7.26", "Unauthenticated email from x.test is not accepted due to domain's DMARC policy", BounceHard, SubtypePolicy},
		{554, "5.7.1", "Service unavailable; Client host [1.2.3.4] blocked using zen.spamhaus.org", BounceHard, SubtypeSpam},
		{421, "4.7.0", "Try again later, closing connection", BounceSoft, SubtypePolicy},
		{451, "4.7.1", "Greylisted, try again later", BounceSoft, SubtypePolicy},
		{451, "4.3.0", "Temporary local problem", BounceSoft, SubtypeGeneral},
		{554, "5.4.4", "Unable to route", BounceHard, SubtypeDNSFailure},
		{0, "", "dial tcp 1.2.3.4:25: connect: connection refused", BounceSoft, SubtypeConnection},
		{0, "", "lookup nowhere.test: no such host", BounceHard, SubtypeDNSFailure},
		{0, "", "dns timeout", BounceSoft, SubtypeDNSFailure},
		{550, "", "Something odd", BounceHard, SubtypeGeneral},
		{450, "", "Requested mail action not taken: mailbox unavailable", BounceSoft, SubtypeMailboxUnavailable},
	}
	for _, tt := range tests {
		gotType, gotSub := Classify(tt.code, tt.enhanced, tt.message)
		if gotType != tt.wantType || gotSub != tt.wantSub {
			t.Errorf("Classify(%d, %q, %q) = %s/%s; want %s/%s", tt.code, tt.enhanced, tt.message, gotType, gotSub, tt.wantType, tt.wantSub)
		}
	}
}

func TestSuppresses(t *testing.T) {
	cases := []struct {
		stage    string
		code     int
		enhanced string
		msg      string
		temp     bool
		want     bool
	}{
		{StageRcpt, 550, "5.1.1", "The email account that you tried to reach does not exist", false, true},
		{StageRcpt, 550, "5.2.1", "mailbox disabled", false, true},
		{StageRcpt, 550, "", "User unknown", false, true},
		{StageReport, 550, "5.1.1", "user unknown", false, true},
		{StageConnect, 0, "", "lookup nowhere.invalid: no such host", false, true},
		{StageConnect, 0, "", "nowhere.test publishes a null MX and accepts no mail", false, true},
		{StageRcpt, 550, "5.7.1", "blocked using Spamhaus", false, false},
		{StageRcpt, 550, "5.7.26", "DMARC policy", false, false},
		{StageRcpt, 550, "5.1.1", "rejected: listed at a blocklist", false, false},
		{StageRcpt, 554, "", "rejected for policy reasons", false, false},
		{StageMail, 550, "5.1.1", "user unknown", false, false},
		{StageData, 550, "5.1.1", "user unknown", false, false},
		{StageConnect, 0, "", "dial tcp: connection refused", false, false},
		{StageRcpt, 452, "4.2.2", "mailbox full", true, false},
		{StageRcpt, 550, "5.2.2", "mailbox full", false, false},
		{StageRcpt, 550, "5.1.7", "bad sender address", false, false},
	}
	for _, c := range cases {
		if got := Suppresses(c.stage, c.code, c.enhanced, c.msg, c.temp); got != c.want {
			t.Errorf("Suppresses(%s %d %s %q) = %v", c.stage, c.code, c.enhanced, c.msg, got)
		}
	}
}

func TestIsRateLimited(t *testing.T) {
	yes := []string{
		"421-4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address",
		"451 4.7.500 Server busy. Please try again later",
		"421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints",
		"450 4.7.650 The mail server [192.0.2.1] has been temporarily rate limited due to IP reputation",
		"421 Too many connections from your IP",
	}
	for _, m := range yes {
		if !IsRateLimited(421, "", m) {
			t.Errorf("not rate-limited: %q", m)
		}
	}
	for _, m := range []string{"Greylisted, try again later", "452 4.5.3 Too many recipients", "4.2.2 mailbox full"} {
		if IsRateLimited(451, "", m) {
			t.Errorf("rate-limited: %q", m)
		}
	}
	if IsRateLimited(550, "5.7.1", "rate limit exceeded") {
		t.Error("a 5xx is a refusal, not a rate limit")
	}
}
