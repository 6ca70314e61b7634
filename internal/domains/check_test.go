package domains_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/domains"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/testkeys"
)

var testCfg = domains.RecordConfig{InboundHost: "inbound.mailroom.test", SPFInclude: "ip4:192.0.2.1 a:mx.mailroom.test"}

// shout spells a DNS name the way a careless panel might: upper case with the
// root dot, which must not matter.
func shout(name string) string { return strings.ToUpper(name) + "." }

// publish puts recs into DNS exactly as a domain owner following them would.
func publish(s *dnstest.Server, recs []domains.Record) {
	for _, r := range recs {
		switch r.Type {
		case "MX":
			s.AddMX(shout(r.Name), shout(r.Value), uint16(*r.Priority))
		case "TXT":
			s.AddTXT(shout(r.Name), r.Value)
		case "CNAME":
			s.AddCNAME(shout(r.Name), shout(r.Value))
		}
	}
}

// buildWithRealKeys builds domain's records with real DKIM keys, the
// selectors taking keys first, first+1, ... of testkeys' pool.
func buildWithRealKeys(t *testing.T, domain string, first int) []domains.Record {
	t.Helper()
	var keys []domains.KeySet
	for i, sel := range domains.DKIMSelectors() {
		k := testkeys.Key(first + i)
		keys = append(keys, domains.KeySet{Selector: sel, PublicValue: domains.DKIMRecordValue(&k.PublicKey)})
	}
	return domains.BuildRecords(domain, testCfg, keys, "tok_0123456789")
}

func foundByIndex(t *testing.T, checked []domains.Checked) []bool {
	t.Helper()
	out := make([]bool, len(checked))
	for i, c := range checked {
		out[i] = c.Found
	}
	return out
}

func TestCheckAllEndToEnd(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t)
	r := dnsresolve.New(s.Addr())
	ctx := context.Background()
	recs := buildWithRealKeys(t, "example.com", 0)
	if len(recs[2].Value) <= 255 {
		t.Fatalf("DKIM value is %d bytes; test expects it to be split", len(recs[2].Value))
	}

	publish(s, recs)
	s.AddTXT("example.com", "google-site-verification=abc") // neighbours must not confuse checks
	s.AddTXT("_mailroom.example.com", "mailroom-verification=someone-else")

	checked, err := domains.CheckAll(ctx, r, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checked {
		if !c.Found || c.Status != domains.StatusVerified {
			t.Errorf("%s %s: found=%v status=%s", c.Record.Record, c.Name, c.Found, c.Status)
		}
	}

	// Take the DMARC record away: only it goes missing.
	s.Remove("_dmarc.example.com", dns.TypeTXT)
	checked, err = domains.CheckAll(ctx, r, recs)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range checked {
		if want := c.Record.Record != domains.RecordDMARC; c.Found != want {
			t.Errorf("after removing DMARC, record %d (%s) found=%v", i, c.Record.Record, c.Found)
		}
		if c.Record.Record == domains.RecordDMARC && c.Status != domains.StatusPending {
			t.Errorf("removed DMARC status = %s, want pending", c.Status)
		}
	}

	// Publish a different key at mr2: that record fails, the others hold.
	other := buildWithRealKeys(t, "example.com", 3)
	s.Reset()
	publish(s, recs)
	s.Remove(recs[3].Name, dns.TypeTXT)
	s.AddTXT(recs[3].Name, other[3].Value)
	checked, err = domains.CheckAll(ctx, r, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, true, false, true, true, true, true}
	if got := foundByIndex(t, checked); !equalBools(got, want) {
		t.Errorf("with wrong mr2 key found = %v, want %v", got, want)
	}
	if checked[3].Status != domains.StatusFailed {
		t.Errorf("wrong DKIM key status = %s, want failed", checked[3].Status)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckTolerance(t *testing.T) {
	t.Parallel()
	s := dnstest.Start(t)
	r := dnsresolve.New(s.Addr())
	prio := 10

	tests := []struct {
		name    string
		publish func(name string)
		rec     domains.Record
		status  string
	}{
		{"dkim whitespace and tag order",
			func(n string) { s.AddTXT(n, "k=rsa; p=AB CD\tEF ;v=DKIM1") },
			domains.Record{Record: "DKIM", Type: "TXT", Value: "v=DKIM1; k=rsa; p=ABCDEF"}, "verified"},
		{"dkim other key",
			func(n string) { s.AddTXT(n, "v=DKIM1; k=rsa; p=XYZ") },
			domains.Record{Record: "DKIM", Type: "TXT", Value: "v=DKIM1; k=rsa; p=ABCDEF"}, "failed"},
		{"dkim nothing",
			func(n string) {},
			domains.Record{Record: "DKIM", Type: "TXT", Value: "v=DKIM1; k=rsa; p=ABCDEF"}, "pending"},
		{"spf extra mechanisms, case, dots, hardfail",
			func(n string) {
				s.AddTXT(n, "V=SPF1 include:_spf.google.com +ip4:192.0.2.1 A:MX.Mailroom.Test. -all")
			},
			domains.Record{Record: "SPF", Type: "TXT", Value: "v=spf1 ip4:192.0.2.1 a:mx.mailroom.test ~all"}, "verified"},
		{"spf without our mechanism",
			func(n string) { s.AddTXT(n, "v=spf1 ip4:192.0.2.1 -all") },
			domains.Record{Record: "SPF", Type: "TXT", Value: "v=spf1 ip4:192.0.2.1 a:mx.mailroom.test ~all"}, "failed"},
		{"two spf records are a permanent error, even when one matches",
			func(n string) {
				s.AddTXT(n, "v=spf1 ip4:192.0.2.1 a:mx.mailroom.test ~all")
				s.AddTXT(n, "v=spf1 include:_spf.other.example -all")
			},
			domains.Record{Record: "SPF", Type: "TXT", Value: "v=spf1 ip4:192.0.2.1 a:mx.mailroom.test ~all"}, "failed"},
		{"spf10 is not spf",
			func(n string) { s.AddTXT(n, "v=spf10 ip4:192.0.2.1 a:mx.mailroom.test") },
			domains.Record{Record: "SPF", Type: "TXT", Value: "v=spf1 ip4:192.0.2.1 a:mx.mailroom.test ~all"}, "pending"},
		{"dmarc stricter policy counts",
			func(n string) { s.AddTXT(n, "v=DMARC1; p=reject; rua=mailto:d@example.com") },
			domains.Record{Record: "DMARC", Type: "TXT", Value: "v=DMARC1; p=none;"}, "verified"},
		{"dmarc bogus policy",
			func(n string) { s.AddTXT(n, "v=DMARC1; p=maybe") },
			domains.Record{Record: "DMARC", Type: "TXT", Value: "v=DMARC1; p=none;"}, "failed"},
		{"ownership among others",
			func(n string) {
				s.AddTXT(n, "unrelated")
				s.AddTXT(n, "mailroom-verification=tok")
			},
			domains.Record{Record: "OWNERSHIP", Type: "TXT", Value: "mailroom-verification=tok"}, "verified"},
		{"ownership other token",
			func(n string) { s.AddTXT(n, "mailroom-verification=tok2") },
			domains.Record{Record: "OWNERSHIP", Type: "TXT", Value: "mailroom-verification=tok"}, "failed"},
		{"mx any priority, case, dot",
			func(n string) {
				s.AddMX(n, "backup.example.net", 5)
				s.AddMX(n, "INBOUND.mailroom.test.", 50)
			},
			domains.Record{Record: "MX", Type: "MX", Value: "inbound.mailroom.test", Priority: &prio}, "verified"},
		{"mx elsewhere",
			func(n string) { s.AddMX(n, "mx.google.com", 10) },
			domains.Record{Record: "MX", Type: "MX", Value: "inbound.mailroom.test", Priority: &prio}, "failed"},
		{"cname",
			func(n string) { s.AddCNAME(n, "Track.Mailroom.Test.") },
			domains.Record{Record: "TRACKING", Type: "CNAME", Value: "track.mailroom.test"}, "verified"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "case" + string(rune('a'+i)) + ".example.org"
			tt.publish(name)
			tt.rec.Name = name
			found, err := domains.Check(context.Background(), r, tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			if found != (tt.status == "verified") {
				t.Errorf("Check found = %v", found)
			}
			checked, err := domains.CheckAll(context.Background(), r, []domains.Record{tt.rec})
			if err != nil || checked[0].Status != tt.status {
				t.Errorf("CheckAll status = %s, %v; want %s", checked[0].Status, err, tt.status)
			}
		})
	}
}

func TestCheckResolverFailure(t *testing.T) {
	t.Parallel()
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	r := dnsresolve.New(silent.LocalAddr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()

	recs := domains.BuildRecords("example.com", testCfg, nil, "tok")
	checked, err := domains.CheckAll(ctx, r, recs)
	if err == nil {
		t.Fatal("no error when the resolver never answers")
	}
	if len(checked) != len(recs) {
		t.Fatalf("got %d results for %d records", len(checked), len(recs))
	}
	for _, c := range checked {
		if c.Found || c.Status != domains.StatusPending {
			t.Errorf("%s: found=%v status=%s after failed lookup", c.Record.Record, c.Found, c.Status)
		}
	}
	if _, err := domains.Check(ctx, r, recs[0]); err == nil {
		t.Error("Check: no error when the resolver never answers")
	}
}
