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
