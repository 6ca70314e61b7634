package delivery_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"mailroom/internal/delivery"
	"mailroom/internal/events"
	"mailroom/internal/sending"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// Replies the large receivers give, as the sink plays them at RCPT by the
// recipient's local part.
var receiverReplies = map[string]*smtp.SMTPError{
	"blocklisted": {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Service unavailable; Client host [192.0.2.1] blocked using Spamhaus"},
	"dmarc":       {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 26}, Message: "Unauthenticated email from example.com is not accepted due to domain's DMARC policy"},
	"spammy":      {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Our system has detected that this message is likely unsolicited mail"},
	"gone":        {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "The email account that you tried to reach does not exist"},
	"disabled":    {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 2, 1}, Message: "The email account that you tried to reach is disabled"},
	"gmailrate":   {Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 28}, Message: "Our system has detected an unusual rate of unsolicited mail originating from your IP address"},
	"msbusy":      {Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 500}, Message: "Server busy. Please try again later from [192.0.2.1]"},
	"yahoo":       {Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "[TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints"},
}

func rcptRule(to string) error {
	local, _, _ := strings.Cut(strings.ToLower(to), "@")
	for k, e := range receiverReplies {
		if strings.HasPrefix(local, k) {
			return e
		}
	}
	return nil
}

func bouncedData(t *testing.T, b *bundle, id string) map[string]any {
	t.Helper()
	for _, e := range b.timeline(t, id) {
		if e.Type == events.EmailBounced {
			return e.Data
		}
	}
	t.Fatalf("no email.bounced for %s: %v", id, kinds(b.timeline(t, id)))
	return nil
}

// TestBounceCauses: only recipient-level permanent failures suppress;
// policy and reputation refusals, refusals at MAIL FROM or DATA bounce the
// email (email.bounced with its type and subtype) and leave the address
// usable.
func TestBounceCauses(t *testing.T) {
	b := setupSink(t, []smtpsink.Option{
		smtpsink.WithRcptRule(rcptRule),
		smtpsink.WithHandler(func(_ string, to []string, _ []byte) error {
			if slices.ContainsFunc(to, func(s string) bool { return strings.HasPrefix(s, "datarefused") }) {
				return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Message content rejected"}
			}
			return nil
		}),
	})
	cases := []struct {
		to           string
		typ, subtype string
		suppressed   bool
	}{
		{"gone@example.net", "hard", "mailbox_unavailable", true},
		{"disabled@example.net", "hard", "mailbox_unavailable", true},
		{"blocklisted@example.org", "hard", "spam", false},
		{"dmarc@example.org", "hard", "policy", false},
		{"datarefused@example.net", "hard", "general", false},
		{"someone@nxdomain.example.invalid", "hard", "dns_failure", true},
	}
	idsBy := map[string]string{}
	for _, c := range cases {
		idsBy[c.to] = b.insert(t, send{From: "news@example.com", To: []string{c.to}, Subject: "s", Text: "x"})
	}
	for _, c := range cases {
		t.Run(c.to, func(t *testing.T) {
			r := b.waitStatus(t, idsBy[c.to], sending.StatusBounced)
			d := bouncedData(t, b, idsBy[c.to])
			if d["bounce_type"] != c.typ || d["bounce_subtype"] != c.subtype {
				t.Errorf("bounce %v/%v, want %s/%s (diagnostic %v, recipient %+v)", d["bounce_type"], d["bounce_subtype"], c.typ, c.subtype, d["diagnostic"], r.Recipients)
			}
			if got := b.suppression(t, c.to) != ""; got != c.suppressed {
				t.Errorf("suppressed = %v, want %v", got, c.suppressed)
			}
		})
	}
}

// TestMailFromRefusalDoesNotSuppress: a 5xx to MAIL FROM (the sender is
// refused, whoever the recipients) bounces every recipient without
// suppressing any.
func TestMailFromRefusalDoesNotSuppress(t *testing.T) {
	b := setupSink(t, []smtpsink.Option{smtpsink.WithMailRule(func(string) error {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Sender address rejected: access denied"}
	})})
	id := b.insert(t, send{From: "news@example.com", To: []string{"a@example.net", "b@example.net"}, Subject: "s", Text: "x"})
	r := b.waitStatus(t, id, sending.StatusBounced)
	for _, rc := range r.Recipients {
		if rc.Stage != "mail" || rc.Code != 550 {
			t.Errorf("recipient %+v", rc)
		}
		if b.suppression(t, rc.Email) != "" {
			t.Errorf("%s suppressed after a MAIL FROM refusal", rc.Email)
		}
	}
	if d := bouncedData(t, b, id); d["bounce_subtype"] != "policy" {
		t.Errorf("bounce data %v", d)
	}
}

// TestDestinationHold: a rate-limit reply (Gmail's, Microsoft's, Yahoo's
// texts) holds the receiving domain at once; repeated policy refusals hold
// it after delivery.PolicyTrip; a held domain gets nothing (its recipients
// wait, no attempt counted) while other domains go on; the hold shows in
// Held and in the metrics.
func TestDestinationHold(t *testing.T) {
	for _, who := range []string{"gmailrate", "msbusy", "yahoo"} {
		t.Run(who, func(t *testing.T) {
			b := setupSink(t, []smtpsink.Option{smtpsink.WithRcptRule(rcptRule)})
			first := b.insert(t, send{From: "news@example.com", To: []string{who + "@example.org"}, Subject: "s", Text: "x"})
			testapp.Eventually(t, 10*time.Second, func() bool {
				r := b.row(t, first)
				return len(r.Recipients) == 1 && r.Recipients[0].Status == delivery.RcptDeferred
			}, "first send never deferred")
			held := b.a.Delivery().Held()
			if len(held) != 1 || held[0].Domain != "example.org" || held[0].Reason != delivery.HoldRateLimit {
				t.Fatalf("held = %+v", held)
			}
			if w := time.Until(held[0].Until); w < 50*time.Second || w > 61*time.Second {
				t.Errorf("hold of %v, want about a minute", w)
			}

			later := b.insert(t, send{From: "news@example.com", To: []string{"fine@example.org", "fine@example.net"}, Subject: "s2", Text: "x"})
			messageFor(t, b.sink, "fine@example.net")
			r := b.row(t, later)
			for _, rc := range r.Recipients {
				if rc.Email == "fine@example.org" && (rc.Status != delivery.RcptPending || rc.Attempts != 0) {
					t.Errorf("held recipient %+v", rc)
				}
			}
			for _, m := range b.sink.Messages() {
				if slices.Contains(m.To, "fine@example.org") {
					t.Error("a held domain was sent to")
				}
			}

			srv := httptest.NewServer(promhttp.HandlerFor(b.a.Registry, promhttp.HandlerOpts{}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{`mailroom_delivery_destination_hold_seconds{domain="example.org",reason="rate_limit"}`, `mailroom_delivery_destination_holds_total{reason="rate_limit"} 1`} {
				if !strings.Contains(string(body), want) {
					t.Errorf("metrics lack %s", want)
				}
			}
		})
	}

	t.Run("policy", func(t *testing.T) {
		b := setupSink(t, []smtpsink.Option{smtpsink.WithRcptRule(rcptRule)})
		for i := range delivery.PolicyTrip {
			id := b.insert(t, send{From: "news@example.com", To: []string{"blocklisted" + string(rune('a'+i)) + "@example.org"}, Subject: "s", Text: "x"})
			b.waitStatus(t, id, sending.StatusBounced)
			if i < delivery.PolicyTrip-1 && len(b.a.Delivery().Held()) != 0 {
				t.Fatalf("held after %d refusals", i+1)
			}
		}
		held := b.a.Delivery().Held()
		if len(held) != 1 || held[0].Reason != delivery.HoldPolicy || !strings.Contains(held[0].Last, "5.7.1") {
			t.Fatalf("held = %+v", held)
		}
		if b.suppression(t, "blocklisteda@example.org") != "" {
			t.Error("a policy refusal suppressed the address")
		}
	})
}
