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
