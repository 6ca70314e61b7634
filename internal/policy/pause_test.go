package policy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// hooks receives webhook deliveries and keeps their event names and data.
type hooks struct {
	mu     sync.Mutex
	events []map[string]any
}

func (h *hooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var env map[string]any
	json.Unmarshal(b, &env)
	h.mu.Lock()
	h.events = append(h.events, env)
	h.mu.Unlock()
}

func (h *hooks) find(kind string) map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e["event"] == kind {
			return e
		}
	}
	return nil
}

// TestReputationPause: real sends that bounce (through the SMTP sink) push
// the workspace's bounce rate over the threshold; it is paused
// (workspace.paused, then 403 workspace_paused on every node, test sends
// included), and released by Resume (workspace.resumed). Bounces of test
// addresses never count.
func TestReputationPause(t *testing.T) {
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()), testapp.WithEnv("MAILROOM_PAUSE_MIN_SENDS", "4"))
	// A workspace whose owner's mailbox refuses everything: every real send
	// the sandbox may make to it bounces.
	ws, key := a.NewWorkspace("Bouncy", "reject-me@example.org")
	recv := &hooks{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	want(t, a.DoKey(key, "POST", "/v1/webhooks", map[string]any{"url": srv.URL, "events": []string{"workspace.paused", "workspace.resumed"}}), 201, "")
	// The second node has the same settings: on PostgreSQL either node may
	// deliver the bounces, and the one that records them judges the rate.
	b := testapp.Start(t, testapp.WithDatabase(a.Env["MAILROOM_DATABASE_URL"]), testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()),
		testapp.WithEnv("MAILROOM_PAUSE_MIN_SENDS", "4"))

	ctx := context.Background()
	// Simulated bounces of a test address never count.
	for range 5 {
		want(t, a.DoKey(key, "POST", "/v1/emails", map[string]any{"from": sandbox, "to": "bounced@mailroom.test", "subject": "t", "text": "t"}), 200, "")
	}
	if err := a.Policy().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Policy().Paused(ws) {
		t.Fatal("paused by test-address bounces")
	}
	var ids []string
	for range 4 {
		m := want(t, a.DoKey(key, "POST", "/v1/emails", map[string]any{"from": sandbox, "to": "reject-me@example.org", "subject": "s", "text": "t"}), 200, "")
		ids = append(ids, m["id"].(string))
	}
	// Delivery tells the policy of each bounce after its commit; the next
	// flush (every second) pauses the workspace: the first bounce of the
	// four sends is over the threshold already.
	testapp.Eventually(t, 30*time.Second, func() bool { return a.Policy().Paused(ws) }, "the workspace was never paused")
	// The four go to one address: once one of them bounces, the address is
	// suppressed and an email delivered after that fails instead.
	if st := a.DoKey(key, "GET", "/v1/emails/"+ids[0], nil).JSON()["status"]; st != "bounced" && st != "failed" && st != "sending" && st != "queued" {
		t.Fatalf("first email %v", st)
	}
	r := a.DoKey(key, "POST", "/v1/emails", map[string]any{"from": sandbox, "to": "delivered@mailroom.test", "subject": "s", "text": "t"})
	want(t, r, 403, "workspace_paused")
	// The other node honours it at its next poll of the holds.
	testapp.Eventually(t, 5*time.Second, func() bool {
		return b.DoKey(key, "POST", "/v1/emails", map[string]any{"from": sandbox, "to": "delivered@mailroom.test", "subject": "s", "text": "t"}).Status == 403
	}, "the second node kept sending for a paused workspace")
	// Other workspaces are not affected.
	want(t, a.Do("POST", "/v1/emails", map[string]any{"from": sandbox, "to": owner, "subject": "s", "text": "t"}), 200, "")

	testapp.Eventually(t, 10*time.Second, func() bool { return recv.find("workspace.paused") != nil }, "no workspace.paused webhook")
	data := recv.find("workspace.paused")["data"].(map[string]any)
	// The flush may come between two bounces: the first that crosses the
	// line pauses.
	if br, _ := data["bounce_rate"].(float64); data["workspace_id"] != ws || br < 0.08 || data["sends"] != 4.0 || data["reason"] == nil {
		t.Fatalf("workspace.paused data %v", data)
	}

	if changed, err := a.Policy().Resume(ctx, ws); err != nil || !changed {
		t.Fatalf("resume: %v %v", changed, err)
	}
	if changed, _ := a.Policy().Resume(ctx, ws); changed {
		t.Fatal("a second resume changed something")
	}
	want(t, a.DoKey(key, "POST", "/v1/emails", map[string]any{"from": sandbox, "to": "delivered@mailroom.test", "subject": "s", "text": "t"}), 200, "")
	testapp.Eventually(t, 5*time.Second, func() bool {
		return b.DoKey(key, "POST", "/v1/emails", map[string]any{"from": sandbox, "to": "delivered@mailroom.test", "subject": "s", "text": "t"}).Status == 200
	}, "the second node kept the workspace paused")
	testapp.Eventually(t, 10*time.Second, func() bool { return recv.find("workspace.resumed") != nil }, "no workspace.resumed webhook")
}
