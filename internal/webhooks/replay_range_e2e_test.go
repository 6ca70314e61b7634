package webhooks_test

import (
	"testing"
	"time"

	"mailroom/internal/events"
)

// TestBulkReplayQueuesPastEvents: POST /v1/webhooks/{id}/replay queues the
// filtered past events for the endpoint through the delivery pool (each
// signed with its secret, the stored body), answers how many, and narrows
// by types, email_id and time.
func TestBulkReplayQueuesPastEvents(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	const count = 30
	delivered := n.raise(t, n.WorkspaceID, events.EmailDelivered, count) // before any endpoint: nobody was sent these
	n.raise(t, n.WorkspaceID, events.EmailSent, 5)
	rc := newReceiver(t, n.clock)
	id := n.register(t, rc, nil)["id"].(string) // default: delivered, bounced, complained

	r := n.Do("POST", "/v1/webhooks/"+id+"/replay", map[string]any{"since": "1h"})
	if res := r.JSON(); r.Status != 202 || res["queued"].(float64) != count || res["matched"].(float64) != count || res["has_more"] != false {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	hits := rc.waitCount(count, 10*time.Second)
	seen := map[string]bool{}
	for _, h := range hits {
		if len(h.verified) != 1 || h.envelope.Event != events.EmailDelivered || h.header.Get("X-Svc-Event") != events.EmailDelivered {
			t.Fatalf("replayed delivery %s (verified %v)", h.body, h.verified)
		}
		seen[h.envelope.ID] = true
	}
	for _, ev := range delivered {
		if !seen[ev] {
			t.Fatalf("event %s was not replayed", ev)
		}
	}
	n.waitDeliveries(t, id, count)

	// types, email_id and until narrow; sent events reach the endpoint
	// only when asked for by type.
	for _, c := range []struct {
		body map[string]any
		want float64
	}{
		{map[string]any{"types": []string{"email.sent"}}, 5},
		{map[string]any{"types": []string{"email.bounced"}}, 0},
		{map[string]any{"email_id": "em_3"}, 1},
		{map[string]any{"since": "1h", "until": "30m"}, 0},
	} {
		r := n.Do("POST", "/v1/webhooks/"+id+"/replay", c.body)
		if r.Status != 202 || r.JSON()["matched"].(float64) != c.want {
			t.Fatalf("replay %v: %d %s, want %v matched", c.body, r.Status, r.Body, c.want)
		}
	}
	rc.waitCount(count+6, 10*time.Second)
	if r := n.Do("POST", "/v1/webhooks/"+id+"/replay", map[string]any{"types": []string{"email.opened"}}); r.Status != 400 {
		t.Fatalf("unknown type: %d %s", r.Status, r.Body)
	}
	if r := n.Do("POST", "/v1/webhooks/wh_nope/replay", map[string]any{}); r.Status != 404 {
		t.Fatalf("unknown endpoint: %d %s", r.Status, r.Body)
	}
}
