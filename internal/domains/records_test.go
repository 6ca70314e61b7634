package domains_test

import (
	"encoding/json"
	"testing"

	"mailroom/internal/domains"
)

func TestBuildRecords(t *testing.T) {
	t.Parallel()
	cfg := domains.RecordConfig{InboundHost: "inbound.mailroom.test", SPFInclude: "ip4:192.0.2.1 a:mx.mailroom.test"}
	keys := []domains.KeySet{{"mr1", "v=DKIM1; k=rsa; p=AAA"}, {"mr2", "v=DKIM1; k=rsa; p=BBB"}, {"mr3", "v=DKIM1; k=rsa; p=CCC"}}
	got := domains.BuildRecords("example.com", cfg, keys, "tok123")

	type row struct {
		record, typ, name, value string
		required                 bool
	}
	want := []row{
		{"MX", "MX", "example.com", "inbound.mailroom.test", false},
		{"MX", "MX", "send.example.com", "inbound.mailroom.test", true},
		{"DKIM", "TXT", "mr1._domainkey.example.com", "v=DKIM1; k=rsa; p=AAA", true},
		{"DKIM", "TXT", "mr2._domainkey.example.com", "v=DKIM1; k=rsa; p=BBB", true},
		{"DKIM", "TXT", "mr3._domainkey.example.com", "v=DKIM1; k=rsa; p=CCC", true},
		{"SPF", "TXT", "send.example.com", "v=spf1 ip4:192.0.2.1 a:mx.mailroom.test ~all", true},
		{"DMARC", "TXT", "_dmarc.example.com", "v=DMARC1; p=none;", true},
		{"OWNERSHIP", "TXT", "_mailroom.example.com", "mailroom-verification=tok123", true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if (row{g.Record, g.Type, g.Name, g.Value, g.Required}) != w || g.Status != "pending" {
			t.Errorf("record %d = %+v, want %+v pending", i, g, w)
		}
		if (g.Priority != nil) != (w.record == "MX") {
			t.Errorf("record %d priority = %v", i, g.Priority)
		}
	}
	if *got[0].Priority != 10 {
		t.Errorf("MX priority = %d", *got[0].Priority)
	}

	b, _ := json.Marshal(got[0])
	if string(b) != `{"record":"MX","type":"MX","name":"example.com","value":"inbound.mailroom.test","priority":10,"status":"pending","required":false}` {
		t.Errorf("MX JSON = %s", b)
	}
	b, _ = json.Marshal(got[6])
	if string(b) != `{"record":"DMARC","type":"TXT","name":"_dmarc.example.com","value":"v=DMARC1; p=none;","status":"pending","required":true}` {
		t.Errorf("DMARC JSON = %s", b)
	}
}
