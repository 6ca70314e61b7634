package e2e

import (
	"net"
	"strconv"
	"testing"
	"time"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestDedicatedIPIsTheSource: mail of a workspace that took a dedicated IP
// leaves from it (the receiving server sees that address); past the IP's
// limit for the day (here its daily_cap of 1, below the warm-up allowance)
// the rest spills to the shared pool, the node's own address; a paused IP
// sends nothing. 127.0.0.2 is a loopback address of its own on Linux.
func TestDedicatedIPIsTheSource(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink),
		testapp.WithEnv("MAILROOM_IPS", "127.0.0.2"),
	)
	a.VerifiedDomain(a.Key, dns, "ips.example", nil)
	r := a.Do("POST", "/v1/ips", map[string]any{"ip": "127.0.0.2"})
	if r.Status != 201 && r.Status != 200 {
		t.Fatalf("take ip: %d %s", r.Status, r.Body)
	}
	ipID, _ := r.JSON()["id"].(string)
	if r := a.Do("PATCH", "/v1/ips/"+ipID, map[string]any{"daily_cap": 1}); r.Status != 200 {
		t.Fatalf("cap: %d %s", r.Status, r.Body)
	}

	send := func(n int) string {
		t.Helper()
		r := a.Do("POST", "/v1/emails", map[string]any{"from": "news@ips.example", "to": []string{"bob@rcpt.example"},
			"subject": "s" + strconv.Itoa(n), "text": "t"})
		if r.Status != 200 {
			t.Fatalf("send %d: %d %s", n, r.Status, r.Body)
		}
		msgs := sink.WaitFor(n, 15*time.Second)
		if len(msgs) != n {
			t.Fatalf("sink got %d messages, want %d", len(msgs), n)
		}
		host, _, _ := net.SplitHostPort(msgs[n-1].Remote)
		return host
	}
	if src := send(1); src != "127.0.0.2" {
		t.Fatalf("first message came from %s, want the dedicated 127.0.0.2", src)
	}
	if src := send(2); src != "127.0.0.1" {
		t.Fatalf("past the daily cap the message came from %s, want the shared 127.0.0.1", src)
	}
	// Paused, the IP sends nothing even with room: lift the cap, pause it.
	if r := a.Do("PATCH", "/v1/ips/"+ipID, map[string]any{"daily_cap": nil, "paused": true}); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	if src := send(3); src != "127.0.0.1" {
		t.Fatalf("a paused IP's workspace sent from %s, want the shared 127.0.0.1", src)
	}
	if r := a.Do("PATCH", "/v1/ips/"+ipID, map[string]any{"paused": false}); r.Status != 200 {
		t.Fatalf("resume: %d %s", r.Status, r.Body)
	}
	if src := send(4); src != "127.0.0.2" {
		t.Fatalf("after the cap was lifted the message came from %s, want 127.0.0.2", src)
	}
	if got := a.Do("GET", "/v1/ips/"+ipID, nil).JSON()["sent_today"]; got != float64(2) {
		t.Fatalf("sent_today %v, want 2 (the messages that left from it)", got)
	}
}
