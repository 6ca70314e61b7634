package webhooks_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/testkit/testapp"
)

func TestEventReachesSubscribedEndpointsSigned(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	delivered := newReceiver(t, n.clock)
	bounced := newReceiver(t, n.clock)
	wh := n.register(t, delivered, map[string]any{
		"events":  []string{"message.delivered", "email.sent"},
		"headers": map[string]string{"Authorization": "Bearer hook-token", "X-Tenant": "acme"},
	})
	n.register(t, bounced, map[string]any{"events": []string{"email.bounced"}})

	// Another workspace's endpoint never sees this workspace's events.
	otherWS, otherKey := n.NewWorkspace("Other", "o@example.com")
	other := newReceiver(t, n.clock)
	if r := n.DoKey(otherKey, "POST", "/v1/webhooks", map[string]any{"url": other.URL(), "events": []string{"email.delivered"}}); r.Status != 201 {
		t.Fatalf("other workspace create: %d %s", r.Status, r.Body)
	}

	ids := n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
	hits := delivered.waitCount(1, 10*time.Second)
	h := hits[0]
	if h.envelope.ID != ids[0] || h.envelope.Event != "email.delivered" || h.envelope.Sequence != 3 ||
		h.envelope.Timestamp != "2025-03-01T12:00:00.000Z" {
		t.Fatalf("envelope = %+v", h.envelope)
	}
	var data map[string]any
	json.Unmarshal(h.envelope.Data, &data)
	if data["email_id"] != "em_0" || data["subject"] != "Hi" || data["tags"].(map[string]any)["k"] != "v" {
		t.Fatalf("data = %s", h.envelope.Data)
	}
	for k, want := range map[string]string{
		"Content-Type":      "application/json",
		"X-Svc-Event":       "email.delivered",
		"X-Svc-Delivery-Id": ids[0],
		"X-Request-Id":      ids[0],
		"Authorization":     "Bearer hook-token",
		"X-Tenant":          "acme",
	} {
		if got := h.header.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if len(h.verified) != 1 || h.ts != t0.Unix() {
		t.Fatalf("signature %q not verified (t=%d)", h.header.Get("X-Svc-Signature"), h.ts)
	}

	// Only subscribed endpoints: the bounced-only endpoint and the other
	// workspace's endpoint got nothing, and a bounce goes only to the former.
	bouncedIDs := n.raise(t, n.WorkspaceID, events.EmailBounced, 1)
	bh := bounced.waitCount(1, 10*time.Second)
	if bh[0].envelope.ID != bouncedIDs[0] || bh[0].envelope.Event != "email.bounced" {
		t.Fatalf("bounced endpoint got %+v", bh[0].envelope)
	}
	n.raise(t, otherWS, events.EmailDelivered, 1)
	other.waitCount(1, 10*time.Second)
	n.quiet(t, delivered, 1)
	if bounced.count() != 1 {
		t.Fatalf("bounced endpoint got %d", bounced.count())
	}

	// Timeline-only events are never webhooks.
	n.raise(t, n.WorkspaceID, events.EmailAccepted, 1)
	n.quiet(t, delivered, 1)

	ds := n.waitDeliveries(t, wh["id"].(string), 1)
	d := ds[0]
	if d["event_id"] != ids[0] || d["status_code"].(float64) != 200 || d["error"] != nil || d["retry"] != nil || d["attempt"].(float64) != 1 {
		t.Fatalf("delivery row = %v", d)
	}
	got := n.get(t, "/v1/webhooks/"+wh["id"].(string))
	if got["last_success_at"] == nil || got["consecutive_failures"].(float64) != 0 {
		t.Fatalf("endpoint after success = %v", got)
	}
}

func TestStaticHeadersCannotOverride(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)
	for _, name := range []string{"X-Svc-Signature", "x-svc-event", "X-Request-Id", "Content-Type", "X-Svc-Delivery-Id"} {
		r := n.Do("POST", "/v1/webhooks", map[string]any{"url": rc.URL(), "headers": map[string]string{name: "forged"}})
		if r.Status != http.StatusBadRequest || r.JSON()["error"].(map[string]any)["code"] != "invalid_request" {
			t.Errorf("static header %s: %d %s", name, r.Status, r.Body)
		}
	}
}

// TestTwoNodesShareTheWork: two nodes on one database fan out and deliver
// each event once between them (claims are exclusive; duplicates would only
// come from a crash).
func TestTwoNodesShareTheWork(t *testing.T) {
	t.Parallel()
	a := startNode(t)
	b := startNode(t, testapp.WithDatabase(a.Env["MAILROOM_DATABASE_URL"]))
	b.clock = a.clock
	rc := newReceiver(t, a.clock)
	a.register(t, rc, nil)
	ids := a.raise(t, a.WorkspaceID, events.EmailDelivered, 300)
	ids = append(ids, b.raise(t, a.WorkspaceID, events.EmailDelivered, 300)...)
	hits := rc.waitCount(len(ids), 20*time.Second)
	b.settle(t)
	a.quiet(t, rc, len(ids))
	seen := map[string]int{}
	for _, h := range hits {
		seen[h.envelope.ID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("event %s delivered %d times", id, seen[id])
		}
	}
}
