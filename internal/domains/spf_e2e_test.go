package domains_test

import (
	"fmt"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestSPFEvaluated: the SPF record is judged by an RFC 7208 evaluator for
// every outbound address, not by its mechanisms alone: two v=spf1 records
// (a permanent error at every receiver) and a policy past the 10-lookup
// limit do not verify, and the record says why; merged into one, it does.
func TestSPFEvaluated(t *testing.T) {
	b := setup(t)
	spfOf := func(d apiDomain) apiRecord {
		for _, r := range d.Records {
			if r.Record == "SPF" {
				return r
			}
		}
		t.Fatal("no SPF record")
		return apiRecord{}
	}

	d := b.create(t, b.Key, "two.example.org")
	b.publish(d.Records)
	b.dns.AddTXT("send.two.example.org", "v=spf1 include:_spf.other-provider.example ~all")
	v := b.verify(t, b.Key, d.ID)
	if *v.Verified {
		t.Fatal("verified with two SPF records")
	}
	if r := spfOf(v); r.Status != "failed" || !strings.Contains(r.Detail, "spf permerror") || !strings.Contains(r.Detail, "more than one v=spf1") {
		t.Errorf("SPF record %+v", r)
	}

	d2 := b.create(t, b.Key, "deep.example.org")
	var recs []apiRecord
	for _, r := range d2.Records {
		if r.Record != "SPF" {
			recs = append(recs, r)
		}
	}
	b.publish(recs)
	var includes []string
	for i := range 11 {
		name := fmt.Sprintf("l%d.send.deep.example.org", i)
		b.dns.AddTXT(name, "v=spf1 ip4:203.0.113.1 -all")
		includes = append(includes, "include:"+name)
	}
	b.dns.AddTXT("send.deep.example.org", "v=spf1 "+strings.Join(includes, " ")+" "+strings.TrimSuffix(strings.TrimPrefix(spfOf(d2).Value, "v=spf1 "), " ~all")+" ~all")
	v = b.verify(t, b.Key, d2.ID)
	if *v.Verified {
		t.Fatal("verified past the lookup limit")
	}
	if r := spfOf(v); r.Status != "failed" || !strings.Contains(r.Detail, "10 DNS lookups") {
		t.Errorf("SPF record %+v", r)
	}
	// The read shows the same as the verify answer.
	got := b.Do("GET", "/v1/domains/"+d2.ID, nil)
	if !strings.Contains(string(got.Body), "10 DNS lookups") {
		t.Errorf("domain read lacks the SPF detail: %s", got.Body)
	}

	// One merged record verifies.
	b.dns.Remove("send.two.example.org", 16)
	for _, r := range d.Records {
		if r.Name == "send.two.example.org" && r.Type == "TXT" {
			b.dns.AddTXT(r.Name, r.Value)
		}
	}
	if v := b.verify(t, b.Key, d.ID); !*v.Verified {
		t.Fatalf("one record does not verify: %+v", spfOf(v))
	}
}

// TestDMARCRuaAndSubdomainOverride: MAILROOM_DMARC_RUA puts rua= in the
// suggested record; a subdomain whose p=none record would replace the
// organisational domain's reject says so in its detail.
func TestDMARCRuaAndSubdomainOverride(t *testing.T) {
	b := setup(t, testapp.WithEnv("MAILROOM_DMARC_RUA", "dmarc-reports@reports.example"))
	d := b.create(t, b.Key, "news.parent.example")
	var dmarc apiRecord
	for _, r := range d.Records {
		if r.Record == "DMARC" {
			dmarc = r
		}
	}
	if dmarc.Value != "v=DMARC1; p=none; rua=mailto:dmarc-reports@reports.example;" {
		t.Fatalf("DMARC value %q", dmarc.Value)
	}
	b.dns.AddTXT("_dmarc.parent.example", "v=DMARC1; p=reject; rua=mailto:x@parent.example")
	b.publish(d.Records)
	v := b.verify(t, b.Key, d.ID)
	for _, r := range v.Records {
		if r.Record == "DMARC" && !strings.Contains(r.Detail, "overrides parent.example's DMARC policy (reject) with p=none") {
			t.Errorf("DMARC record %+v", r)
		}
	}
	// A domain with no stricter parent gets no note.
	d2 := b.create(t, b.Key, "plain.example")
	b.publish(d2.Records)
	for _, r := range b.verify(t, b.Key, d2.ID).Records {
		if r.Record == "DMARC" && r.Detail != "" {
			t.Errorf("unexpected note %q", r.Detail)
		}
	}
}
