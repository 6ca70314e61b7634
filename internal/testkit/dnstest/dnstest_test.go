package dnstest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"mailroom/internal/testkit/dnstest"
)

func query(t *testing.T, net, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: net, Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s query %s: %v", net, name, err)
	}
	return r
}

func TestServer(t *testing.T) {
	s := dnstest.Start(t)
	long := strings.Repeat("k", 600)
	s.AddTXT("Example.COM.", "v=spf1 -all")
	s.AddTXT("mr1._domainkey.example.com", "v=DKIM1; p="+long)
	s.AddMX("example.com", "MX.example.net.", 10)
	s.AddCNAME("www.example.com", "example.com")
	s.AddA("example.com", "192.0.2.1")
	s.AddAAAA("example.com", "2001:db8::1")
	s.AddPTR("192.0.2.1", "mx.example.com")

	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		rcode   int
		answers int
	}{
		{"txt case-insensitive", "EXAMPLE.com", dns.TypeTXT, dns.RcodeSuccess, 1},
		{"mx", "example.com", dns.TypeMX, dns.RcodeSuccess, 1},
		{"a", "example.com", dns.TypeA, dns.RcodeSuccess, 1},
		{"aaaa", "example.com", dns.TypeAAAA, dns.RcodeSuccess, 1},
		{"cname", "www.example.com", dns.TypeCNAME, dns.RcodeSuccess, 1},
		{"ptr", "1.2.0.192.in-addr.arpa", dns.TypePTR, dns.RcodeSuccess, 1},
		{"nodata", "www.example.com", dns.TypeTXT, dns.RcodeSuccess, 0},
		{"nxdomain", "nope.example.com", dns.TypeTXT, dns.RcodeNameError, 0},
	}
	for _, tt := range tests {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(tt.name+"/"+network, func(t *testing.T) {
				r := query(t, network, s.Addr(), tt.qname, tt.qtype)
				if r.Rcode != tt.rcode || len(r.Answer) != tt.answers {
					t.Fatalf("rcode %s answers %d, want %s %d", dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[tt.rcode], tt.answers)
				}
			})
		}
	}

	r := query(t, "tcp", s.Addr(), "mr1._domainkey.example.com", dns.TypeTXT)
	txt := r.Answer[0].(*dns.TXT).Txt
	if len(txt) != 3 || len(txt[0]) != 255 || strings.Join(txt, "") != "v=DKIM1; p="+long {
		t.Fatalf("long TXT not split into 255-byte strings: %d parts", len(txt))
	}

	s.Remove("EXAMPLE.com.", dns.TypeMX)
	if r := query(t, "udp", s.Addr(), "example.com", dns.TypeMX); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Fatalf("after Remove: %v", r)
	}
	s.Reset()
	if r := query(t, "udp", s.Addr(), "example.com", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Fatalf("after Reset: rcode %s", dns.RcodeToString[r.Rcode])
	}
}

func TestTruncationOverUDP(t *testing.T) {
	s := dnstest.Start(t)
	for range 10 {
		s.AddTXT("big.example", strings.Repeat("x", 200))
	}
	if r := query(t, "udp", s.Addr(), "big.example", dns.TypeTXT); !r.Truncated {
		t.Fatal("oversized UDP reply not flagged TC")
	}
	if r := query(t, "tcp", s.Addr(), "big.example", dns.TypeTXT); r.Truncated || len(r.Answer) != 10 {
		t.Fatalf("tcp: truncated=%v answers=%d", r.Truncated, len(r.Answer))
	}
}
