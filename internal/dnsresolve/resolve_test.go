package dnsresolve_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/testkit/dnstest"
)

func setup(t *testing.T) (*dnstest.Server, *dnsresolve.Resolver) {
	t.Helper()
	s := dnstest.Start(t)
	return s, dnsresolve.New(s.Addr())
}

func TestLookupTXT(t *testing.T) {
	t.Parallel()
	s, r := setup(t)
	long := "v=DKIM1; k=rsa; p=" + strings.Repeat("A", 400)
	s.AddTXT("Example.com.", long)
	s.AddTXT("example.com", "v=spf1 ", "a -all") // two strings in one record
	s.AddA("host.example.com", "192.0.2.1")

	got, err := r.LookupTXT(context.Background(), "EXAMPLE.COM")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{long, "v=spf1 a -all"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}

	for _, name := range []string{"missing.example.com", "host.example.com"} {
		if _, err := r.LookupTXT(context.Background(), name); !errors.Is(err, dnsresolve.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", name, err)
		}
	}
}

func TestLookupTXTTruncatedFallsBackToTCP(t *testing.T) {
	t.Parallel()
	s, r := setup(t)
	for range 12 { // ~3 KB, more than the 1232-byte UDP buffer
		s.AddTXT("big.example.com", strings.Repeat("x", 250))
	}
	got, err := r.LookupTXT(context.Background(), "big.example.com")
	if err != nil || len(got) != 12 {
		t.Fatalf("got %d records, err %v", len(got), err)
	}
}

func TestLookupMX(t *testing.T) {
	t.Parallel()
	s, r := setup(t)
	s.AddMX("example.com", "MX2.Example.net.", 20)
	s.AddMX("example.com", "mx1.example.net", 10)
	got, err := r.LookupMX(context.Background(), "example.com.")
	if err != nil {
		t.Fatal(err)
	}
	want := []dnsresolve.MX{{"mx1.example.net", 10}, {"mx2.example.net", 20}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := r.LookupMX(context.Background(), "none.example.com"); !errors.Is(err, dnsresolve.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestLookupCNAMEHostAddr(t *testing.T) {
	t.Parallel()
	s, r := setup(t)
	ctx := context.Background()
	s.AddCNAME("www.example.com", "Target.Example.NET.")
	s.AddA("mx.example.com", "192.0.2.7")
	s.AddAAAA("mx.example.com", "2001:db8::7")
	s.AddPTR("192.0.2.7", "MX.example.com.")
	s.AddPTR("2001:db8::7", "mx6.example.com")

	if got, err := r.LookupCNAME(ctx, "WWW.example.com"); err != nil || got != "target.example.net" {
		t.Errorf("CNAME = %q, %v", got, err)
	}
	if _, err := r.LookupCNAME(ctx, "mx.example.com"); !errors.Is(err, dnsresolve.ErrNotFound) {
		t.Errorf("CNAME on A-only name: err = %v", err)
	}
	got, err := r.LookupHost(ctx, "mx.example.com")
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"192.0.2.7", "2001:db8::7"}) {
		t.Errorf("Host = %v, %v", got, err)
	}
	if _, err := r.LookupHost(ctx, "nothing.example.com"); !errors.Is(err, dnsresolve.ErrNotFound) {
		t.Errorf("Host on missing name: err = %v", err)
	}
	if got, err := r.LookupAddr(ctx, "192.0.2.7"); err != nil || !slices.Equal(got, []string{"mx.example.com"}) {
		t.Errorf("PTR v4 = %v, %v", got, err)
	}
	if got, err := r.LookupAddr(ctx, "2001:db8::7"); err != nil || !slices.Equal(got, []string{"mx6.example.com"}) {
		t.Errorf("PTR v6 = %v, %v", got, err)
	}
	if _, err := r.LookupAddr(ctx, "192.0.2.8"); !errors.Is(err, dnsresolve.ErrNotFound) {
		t.Errorf("PTR missing: err = %v", err)
	}
	if _, err := r.LookupAddr(ctx, "not-an-ip"); err == nil || errors.Is(err, dnsresolve.ErrNotFound) {
		t.Errorf("PTR bad ip: err = %v", err)
	}
}

// failingServer answers every query with rcode.
func failingServer(t *testing.T, rcode int) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(req, rcode)
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestFailuresAreNotNotFound(t *testing.T) {
	t.Parallel()

	// A socket that never answers stands in for an unreachable server.
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })

	tests := []struct {
		name string
		addr string
	}{
		{"servfail", failingServer(t, dns.RcodeServerFailure)},
		{"refused", failingServer(t, dns.RcodeRefused)},
		{"timeout", silent.LocalAddr().String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := dnsresolve.New(tt.addr).LookupTXT(ctx, "example.com")
			if err == nil || errors.Is(err, dnsresolve.ErrNotFound) {
				t.Fatalf("err = %v, want a failure other than ErrNotFound", err)
			}
		})
	}
}

func TestInvalidName(t *testing.T) {
	t.Parallel()
	_, r := setup(t)
	if _, err := r.LookupTXT(context.Background(), "a..b"); err == nil || errors.Is(err, dnsresolve.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

// FuzzLookupTXT checks that any bytes published in a TXT record come back
// unchanged: miekg/dns escapes quotes, backslashes and unprintable bytes, and
// the resolver must undo exactly that.
func FuzzLookupTXT(f *testing.F) {
	for _, s := range []string{"v=spf1 -all", `say "hi" \ bye`, "tab\there\x00\xff", `\065\`, strings.Repeat("é", 200)} {
		f.Add(s)
	}
	s := dnstest.Start(f)
	r := dnsresolve.New(s.Addr())
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 4000 {
			return
		}
		s.Reset()
		s.AddTXT("fuzz.example", raw)
		got, err := r.LookupTXT(context.Background(), "fuzz.example")
		if err != nil || len(got) != 1 || got[0] != raw {
			t.Fatalf("published %q, got %q, %v", raw, got, err)
		}
	})
}
