package delivery_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"mailroom/internal/delivery"
	"mailroom/internal/dnsresolve"
	"mailroom/internal/testkit/dnstest"
)

// TestCheckHeloName: through a real DNS server on loopback, a .localhost
// name, a name that does not resolve and one that resolves elsewhere are
// reported; one that resolves to MAILROOM_OUTBOUND_IPS or to a local
// interface is not.
func TestCheckHeloName(t *testing.T) {
	dns := dnstest.Start(t)
	dns.AddA("elsewhere.sender.test", "192.0.2.1")
	dns.AddA("mine.sender.test", "198.51.100.7")
	dns.AddA("local.sender.test", "127.0.0.1")
	res := dnsresolve.New(dns.Addr())
	local := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	for _, tc := range []struct {
		helo string
		ips  []string
		want string
	}{
		{"mail.mailroom.localhost", nil, "is not a public host name"},
		{"localhost", nil, "is not a public host name"},
		{"missing.sender.test", nil, "does not resolve"},
		{"elsewhere.sender.test", []string{"198.51.100.7"}, "resolves to 192.0.2.1, not to an address of this node"},
		{"mine.sender.test", []string{"198.51.100.7"}, ""},
		{"mine.sender.test", []string{"198.51.100.0/24"}, ""},
		{"local.sender.test", nil, ""},
	} {
		got := strings.Join(delivery.CheckHeloName(context.Background(), res.LookupHost, tc.helo, tc.ips, local), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.helo, got, tc.want)
		}
	}
}

// TestCheckPublicURL: an http:// public URL is reported (one-click links
// must be https), as is one on localhost or a private address; a public
// https URL is not.
func TestCheckPublicURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://localhost:8080", "is not https; is not reachable from the Internet"},
		{"https://127.0.0.1:8443", "is not reachable from the Internet"},
		{"https://10.1.2.3", "is not reachable from the Internet"},
		{"https://mailroom.local", "is not reachable from the Internet"},
		{"http://mail.example.com", "is not https"},
		{"https://mail.example.com", ""},
		{"https://203.0.113.9", ""},
	} {
		var got []string
		for _, p := range delivery.CheckPublicURL(tc.url) {
			_, rest, _ := strings.Cut(p, `" `)
			got = append(got, strings.SplitN(rest, ":", 2)[0])
		}
		if g := strings.Join(got, "; "); g != tc.want {
			t.Errorf("%s: %q, want %q", tc.url, g, tc.want)
		}
	}
}
