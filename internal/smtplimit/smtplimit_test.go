package smtplimit

import (
	"net"
	"testing"
)

// TestClientKey: IPv4 clients count by address, IPv6 ones by their /64,
// IPv4-mapped IPv6 as IPv4.
func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::"},
		{"2001:db8:1:2:bbbb::9", "2001:db8:1:2::"},
		{"::1", "::"},
	} {
		got := clientKey(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 25})
		if got.String() != tc.want {
			t.Errorf("clientKey(%s) = %s, want %s", tc.ip, got, tc.want)
		}
	}
}

// TestProgress: the transaction's commands restart the idle timeout; the
// ones a client can repeat without moving on do not.
func TestProgress(t *testing.T) {
	for _, v := range []string{"EHLO", "HELO", "AUTH", "STARTTLS", "MAIL", "RCPT", "DATA", "BDAT"} {
		if !Progress(v) {
			t.Errorf("%s is not progress", v)
		}
	}
	for _, v := range []string{"NOOP", "RSET", "VRFY", "HELP", "QUIT", "XYZZY"} {
		if Progress(v) {
			t.Errorf("%s is progress", v)
		}
	}
}
