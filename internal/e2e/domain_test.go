package e2e

import (
	"testing"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/testapp"
)

// dnsRecord is a record as POST /v1/domains lists it.
type dnsRecord struct {
	Record, Type, Name, Value string
	Priority                  *int
}

// publish puts records into the DNS server exactly as a domain owner
// following them would.
func publish(dns *dnstest.Server, records []dnsRecord) {
	for _, rec := range records {
		switch rec.Type {
		case "TXT":
			dns.AddTXT(rec.Name, rec.Value)
		case "MX":
			dns.AddMX(rec.Name, rec.Value, uint16(*rec.Priority))
		case "CNAME":
			dns.AddCNAME(rec.Name, rec.Value)
		}
	}
}

// verifiedDomain adds name to the test workspace, publishes its records
// and verifies it; it returns the domain's id.
func verifiedDomain(t *testing.T, a *testapp.App, dns *dnstest.Server, name string) string {
	t.Helper()
	r := a.Do("POST", "/v1/domains", map[string]any{"domain": name})
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	var dom struct {
		ID      string
		Records []dnsRecord
	}
	r.Decode(t, &dom)
	publish(dns, dom.Records)
	if r := a.Do("POST", "/v1/domains/"+dom.ID+"/verify", nil); r.Status != 200 || r.JSON()["verified"] != true {
		t.Fatalf("verify: %d %s", r.Status, r.Body)
	}
	return dom.ID
}
