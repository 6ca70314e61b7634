package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/testdb"
)

// TestStartRefusesBadOutboundIPs: the real binary stops at start with a
// message naming the setting when MAILROOM_OUTBOUND_IPS holds an SPF term.
func TestStartRefusesBadOutboundIPs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary.Build(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "MAILROOM_HTTP_ADDR="+binary.FreeAddr(t), "MAILROOM_SMTP_ADDR=off", "MAILROOM_DATABASE_URL="+testdb.URL(t),
		"MAILROOM_DATA_DIR="+t.TempDir(), "MAILROOM_SECRET_KEY=serve-test-secret-0123456789", "MAILROOM_OUTBOUND_IPS=192.0.2.10,include:_spf.relay.example")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("serve started with a bad MAILROOM_OUTBOUND_IPS")
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("serve kept running with a bad MAILROOM_OUTBOUND_IPS")
	}
	if !strings.Contains(stderr.String(), `MAILROOM_OUTBOUND_IPS: "include:_spf.relay.example" is not an IP address`) ||
		!strings.Contains(stderr.String(), "MAILROOM_SPF_AUTHORIZE") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

// TestStartDeliverabilityChecks: through the real binary and a DNS server
// on loopback, an EHLO name that resolves elsewhere is warned about at
// start, as is the default http://localhost public URL, and a new domain's
// SPF record carries MAILROOM_OUTBOUND_IPS as ip4:/ip6: and
// MAILROOM_SPF_AUTHORIZE's terms.
func TestStartDeliverabilityChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary.Build(t)
	dns := dnstest.Start(t)
	dns.AddA("out.sender.test", "192.0.2.99")
	addr := binary.FreeAddr(t)
	environ := append(os.Environ(), "MAILROOM_HTTP_ADDR="+addr, "MAILROOM_SMTP_ADDR=off", "MAILROOM_DATABASE_URL="+testdb.URL(t),
		"MAILROOM_DATA_DIR="+t.TempDir(), "MAILROOM_SECRET_KEY=serve-test-secret-0123456789",
		"MAILROOM_DNS_RESOLVER="+dns.Addr(), "MAILROOM_HELO_NAME=out.sender.test",
		"MAILROOM_OUTBOUND_IPS=192.0.2.10,2001:db8::10", "MAILROOM_SPF_AUTHORIZE=include:_spf.relay.example")
	var logs bytes.Buffer
	binary.Serve(t, bin, environ, &logs)
	binary.WaitHealthy(t, addr, 20*time.Second, &logs)
	if !strings.Contains(logs.String(), `deliverability: MAILROOM_HELO_NAME \"out.sender.test\" resolves to 192.0.2.99, not to an address of this node`) {
		t.Errorf("no start warning about the HELO name:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `deliverability: MAILROOM_PUBLIC_URL \"http://localhost:8080\" is not https`) {
		t.Errorf("no start warning about the default public URL:\n%s", logs.String())
	}

	create := exec.Command(bin, "workspace", "create", "--name", "Live", "--owner-email", "a@b.io")
	create.Env = environ
	out, err := create.Output()
	if err != nil {
		t.Fatal(err)
	}
	var ws map[string]string
	if err := json.Unmarshal(out, &ws); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/domains", strings.NewReader(`{"domain":"sender.example"}`))
	req.Header.Set("Authorization", "Bearer "+ws["api_key"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		Records []struct{ Record, Value string } `json:"records"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create domain: %d %v", resp.StatusCode, err)
	}
	found := false
	for _, r := range d.Records {
		if r.Record == "SPF" {
			found = true
			if r.Value != "v=spf1 ip4:192.0.2.10 ip6:2001:db8::10 include:_spf.relay.example ~all" {
				t.Errorf("SPF value %q", r.Value)
			}
		}
	}
	if !found {
		t.Errorf("no SPF record: %+v", d.Records)
	}
}
