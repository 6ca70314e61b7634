package delivery

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"mailroom/internal/mailauth"
)

// TestFeedbackSenderList: an address entry names that address only, a
// domain entry the domain and its subdomains; a trusted client needs no
// From at all; a report without one From is not believed.
func TestFeedbackSenderList(t *testing.T) {
	f := &FeedbackSources{Senders: DefaultFeedbackSenders}
	for addr, want := range map[string]bool{
		"staff@hotmail.com":                       true,
		"STAFF@Hotmail.com":                       true,
		"someone@hotmail.com":                     false, // a mailbox user, whose mail Microsoft signs too
		"feedback@arf.mail.yahoo.com":             true,
		"user@yahoo.com":                          false,
		"feedbackloop@comcastfbl.senderscore.net": true,
		"x@notsenderscore.net":                    false,
		"scomp@aol.net":                           true,
		"other@aol.net":                           false,
	} {
		if got := f.listed(addr); got != want {
			t.Errorf("listed(%q) = %v", addr, got)
		}
	}

	f.TrustedIPs = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	if ok, why := f.trusted(context.Background(), mailauth.Sender{IP: net.ParseIP("10.1.2.3")}, []byte("Subject: x\r\n\r\nx")); !ok {
		t.Errorf("a trusted client's report was not believed: %s", why)
	}
	for _, raw := range []string{"Subject: x\r\n\r\nx", "From: a@x.example, b@y.example\r\n\r\nx"} {
		if ok, why := f.trusted(context.Background(), mailauth.Sender{IP: net.ParseIP("192.0.2.1")}, []byte(raw)); ok || why != "no single From address" {
			t.Errorf("%q: %v, %s", raw, ok, why)
		}
	}
}
