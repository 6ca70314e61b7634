package policy_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/testapp"
)

// count is how many events of kind the endpoint received, each once:
// webhooks are delivered at least once, so a delivery whose outcome was
// not recorded in time comes again with the same event id.
func (h *hooks) count(kind string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[any]bool{}
	for _, e := range h.events {
		if e["event"] == kind {
			seen[e["id"]] = true
		}
	}
	return len(seen)
}

// TestColdSendingThrottle drives the cold-sending throttle through the HTTP
// API over four UTC days (start 3, growth 2): a new workspace gets 3 sends
// on its first day, then 429 velocity_spike (throttle cold_sending) and one
// workspace.throttled; on day 2 it may send 6 while a new address of it
// gets 3; day 3 is clean, so on day 4 the throttle clears on its own
// (workspace.resumed). Test sends are never throttled.
func TestColdSendingThrottle(t *testing.T) {
	c := clock.NewFake(noon)
	a := start(t, c, "MAILROOM_COLD_START", "3", "MAILROOM_COLD_GROWTH", "2")
	ctx := context.Background()
	recv := &hooks{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	want(t, a.Do("POST", "/v1/webhooks", map[string]any{"url": srv.URL, "events": []string{"workspace.throttled", "workspace.resumed"}}), 201, "")
	flush := func() {
		t.Helper()
		if err := a.Policy().Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sendFrom := func(addr, to string, status int, code string) map[string]any {
		t.Helper()
		return want(t, a.Do("POST", "/v1/emails", mail(to, "from", addr)), status, code)
	}
	other := "hello@acme.test"

	// Day 1: a new workspace, no history: 3 sends.
	for i := range 3 {
		sendFrom(from, fmt.Sprintf("d1-%d@example.org", i), 200, "")
	}
	r := a.Do("POST", "/v1/emails", mail("d1-over@example.org"))
	e := errObj(t, want(t, r, 429, "velocity_spike"))
	if e["throttle"] != "cold_sending" || e["resets_at"] != "2026-11-26T00:00:00Z" || r.Header.Get("Retry-After") != "43200" ||
		!strings.Contains(e["next"].(string), "2026-11-26T00:00:00Z") || !strings.Contains(e["message"].(string), "allowance of 3") {
		t.Fatalf("refusal: %v %v", e, r.Header)
	}
	// A booking for later today is checked against today; for day 3 it is
	// fine (it goes, and counts, then).
	want(t, a.Do("POST", "/v1/emails", mail("d1-later@example.org", "send_at", "2026-11-25T13:00:00Z")), 429, "velocity_spike")
	booked := want(t, a.Do("POST", "/v1/emails", mail("d3-booked@example.org", "send_at", "2026-11-27T09:00:00Z")), 202, "")["id"].(string)
	want(t, a.Do("POST", "/v1/emails", mail(delivered)), 200, "")
	flush()
	if !a.Policy().Throttled(a.WorkspaceID) {
		t.Fatal("not throttled after the first refusal")
	}
	sendFrom(from, "d1-again@example.org", 429, "velocity_spike")
	flush()
	testapp.Eventually(t, 10*time.Second, func() bool { return recv.count("workspace.throttled") == 1 }, "no workspace.throttled")

	// Day 2: the workspace's busiest day was 3, so 6; the address it sent
	// from may send 6 too, a new address 3.
	c.Set(noon.AddDate(0, 0, 1))
	for i := range 3 {
		sendFrom(other, fmt.Sprintf("d2-other-%d@example.org", i), 200, "")
	}
	if e := errObj(t, sendFrom(other, "d2-other-over@example.org", 429, "velocity_spike")); !strings.Contains(e["message"].(string), other) {
		t.Fatalf("new address refusal: %v", e)
	}
	for i := range 3 {
		sendFrom(from, fmt.Sprintf("d2-%d@example.org", i), 200, "")
	}
	if e := errObj(t, sendFrom(from, "d2-over@example.org", 429, "velocity_spike")); !strings.Contains(e["message"].(string), "The workspace") ||
		!strings.Contains(e["message"].(string), "allowance of 6") {
		t.Fatalf("workspace refusal on day 2: %v", e)
	}
	flush()

	// Day 3: day 2 saw refusals, so the throttle stays; today is clean.
	c.Set(noon.AddDate(0, 0, 2))
	flush()
	if !a.Policy().Throttled(a.WorkspaceID) {
		t.Fatal("cleared after a day with refusals")
	}
	sendFrom(from, "d3@example.org", 200, "")
	testapp.Eventually(t, 10*time.Second, func() bool { return a.Do("GET", "/v1/emails/"+booked, nil).JSON()["status"] != "scheduled" }, "the booking never went")
	if e := a.Do("GET", "/v1/emails/"+booked, nil).JSON(); e["status"] == "failed" && strings.HasPrefix(e["last_error"].(string), "velocity_spike") {
		t.Fatalf("the booking within day 3's allowance was refused: %v", e)
	}
	flush()

	// Day 4: day 3 was clean: the throttle clears on its own, once.
	c.Set(noon.AddDate(0, 0, 3))
	flush()
	flush()
	if a.Policy().Throttled(a.WorkspaceID) {
		t.Fatal("still throttled after a clean day")
	}
	testapp.Eventually(t, 10*time.Second, func() bool { return recv.count("workspace.resumed") == 1 }, "no workspace.resumed")
	ev := recv.find("workspace.resumed")
	if d, _ := ev["data"].(map[string]any); d["throttle"] != "cold_sending" || d["workspace_id"] != a.WorkspaceID {
		t.Fatalf("workspace.resumed: %v", ev)
	}
	if n := recv.count("workspace.throttled"); n != 1 {
		t.Fatalf("workspace.throttled raised %d times", n)
	}
}

// TestCheckedAgainWhenDue: sends booked a moment ahead go through the real
// promotion pass and meet the policy again then. Booking counts nothing, so
// three bookings pass a cold allowance of 2; when due, two go and the third
// fails with velocity_spike. A booking whose address is paused meanwhile
// fails with address_paused.
func TestCheckedAgainWhenDue(t *testing.T) {
	a := start(t, nil, "MAILROOM_COLD_START", "2")
	at := time.Now().UTC().Add(1500 * time.Millisecond).Format(time.RFC3339Nano)
	var ids []string
	for i := range 3 {
		ids = append(ids, want(t, a.Do("POST", "/v1/emails", mail(fmt.Sprintf("due%d@example.org", i), "send_at", at)), 202, "")["id"].(string))
	}
	paused := want(t, a.Do("POST", "/v1/emails", mail("held@example.org", "from", "held@acme.test", "send_at", at)), 202, "")["id"].(string)
	if err := a.Policy().SetAddressState(context.Background(), a.WorkspaceID, "held@acme.test", "paused"); err != nil {
		t.Fatal(err)
	}
	status := func(id string) (string, string) {
		e := a.Do("GET", "/v1/emails/"+id, nil).JSON()
		le, _ := e["last_error"].(string)
		return e["status"].(string), le
	}
	testapp.Eventually(t, 15*time.Second, func() bool {
		for _, id := range append(ids, paused) {
			if s, _ := status(id); s == "scheduled" {
				return false
			}
		}
		return true
	}, "the bookings were never promoted")
	// The two admitted go on to delivery, which may fail them for its own
	// reasons (acme.test is verified for sending only); the policy's refusal
	// is the one whose last_error names its code.
	refused := 0
	for _, id := range ids {
		if s, le := status(id); s == "failed" && strings.HasPrefix(le, "velocity_spike: ") {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d of 3 due sends refused, want 1", refused)
	}
	if s, le := status(paused); s != "failed" || !strings.HasPrefix(le, "address_paused: ") {
		t.Fatalf("paused address: %s %q", s, le)
	}
}
