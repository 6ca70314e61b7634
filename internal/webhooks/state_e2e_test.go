package webhooks_test

import (
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/testkit/testapp"
)

// TestGoneDisablesAtOnce: a 410 disables the endpoint without waiting for
// the counters; events raised meanwhile are held, and PATCH active true
// releases them and resets the failure count.
func TestGoneDisablesAtOnce(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)
	var gone atomic.Bool
	gone.Store(true)
	rc.setAnswer(func(_ int, w http.ResponseWriter) {
		if gone.Load() {
			w.WriteHeader(http.StatusGone)
		}
	})
	wh := n.register(t, rc, map[string]any{"events": []string{"email.delivered"}})
	id := wh["id"].(string)
	first := n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
	rc.waitCount(1, 10*time.Second)
	var got map[string]any
	testapp.Eventually(t, 10*time.Second, func() bool {
		got = n.get(t, "/v1/webhooks/"+id)
		return got["active"] == false
	}, "endpoint still active after 410: %v", got)
	if got["disabled_reason"] != "gone" || got["consecutive_failures"].(float64) != 1 || got["held_count"].(float64) != 1 {
		t.Fatalf("after 410: %v", got)
	}
	// Held, not sent, whatever the time.
	later := n.raise(t, n.WorkspaceID, events.EmailBounced, 1)
	n.raise(t, n.WorkspaceID, events.EmailDelivered, 2)
	testapp.Eventually(t, 10*time.Second, func() bool {
		return n.get(t, "/v1/webhooks/"+id)["held_count"].(float64) == 3
	}, "held_count")
	n.advance(time.Hour)
	n.quiet(t, rc, 1)

	gone.Store(false)
	r := n.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"active": true})
	if r.Status != 200 || r.JSON()["active"] != true || r.JSON()["consecutive_failures"].(float64) != 0 || r.JSON()["disabled_reason"] != nil {
		t.Fatalf("re-enable: %d %s", r.Status, r.Body)
	}
	hits := rc.waitCount(4, 10*time.Second)
	var ids []string
	for _, h := range hits[1:] {
		ids = append(ids, h.envelope.ID)
	}
	if !slices.Contains(ids, first[0]) || slices.Contains(ids, later[0]) {
		t.Fatalf("released %v; want the 410'd event back and no bounce (not subscribed)", ids)
	}
}

// TestAutoDisableNeedsBoth: 20 consecutive failures within an hour leave
// the endpoint active; 18 hours without a 2xx on top disable it. A test
// delivery that lands re-enables it and releases what was held.
func TestAutoDisableNeedsBoth(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)
	var ok atomic.Bool
	rc.setAnswer(func(_ int, w http.ResponseWriter) {
		if !ok.Load() {
			w.WriteHeader(500)
		}
	})
	wh := n.register(t, rc, nil)
	id := wh["id"].(string)
	// The clock moves only once the failures are recorded: a failure recorded
	// after the move would be due 5 s after the moved clock, never reached.
	recorded := func(failures float64) {
		t.Helper()
		var got map[string]any
		testapp.Eventually(t, 10*time.Second, func() bool {
			got = n.get(t, "/v1/webhooks/"+id)
			return got["consecutive_failures"].(float64) >= failures
		}, "failures recorded: %v", got)
	}
	n.raise(t, n.WorkspaceID, events.EmailDelivered, 20)
	rc.waitCount(20, 10*time.Second)
	recorded(20)
	n.advance(5 * time.Second)
	rc.waitCount(40, 10*time.Second)
	recorded(40)
	n.advance(55 * time.Minute) // attempts 3 and 4 (5 min, 30 min) come due
	rc.waitCount(60, 10*time.Second)
	var got map[string]any
	testapp.Eventually(t, 10*time.Second, func() bool {
		got = n.get(t, "/v1/webhooks/"+id)
		return got["consecutive_failures"].(float64) >= 60
	}, "failures counted: %v", got)
	if got["active"] != true {
		t.Fatalf("disabled after %v failures within an hour: %v", got["consecutive_failures"], got)
	}

	// 18 hours since creation with nothing accepted: the next failures
	// disable it.
	n.advance(17*time.Hour + 10*time.Minute)
	testapp.Eventually(t, 10*time.Second, func() bool {
		got = n.get(t, "/v1/webhooks/"+id)
		return got["active"] == false
	}, "not disabled after 18 h: %v", got)
	if got["disabled_reason"] != "failing" {
		t.Fatalf("disabled: %v", got)
	}
	before := rc.count()
	n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
	testapp.Eventually(t, 10*time.Second, func() bool {
		return n.get(t, "/v1/webhooks/"+id)["held_count"].(float64) == 21
	}, "held: %v", n.get(t, "/v1/webhooks/"+id))
	n.quiet(t, rc, before)

	ok.Store(true)
	r := n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"webhook_id": id})
	if r.Status != 200 || r.JSON()["success"] != true || r.JSON()["status_code"].(float64) != 200 {
		t.Fatalf("test delivery: %d %s", r.Status, r.Body)
	}
	got = n.get(t, "/v1/webhooks/"+id)
	if got["active"] != true || got["consecutive_failures"].(float64) != 0 || got["held_count"].(float64) != 0 {
		t.Fatalf("after landed test delivery: %v", got)
	}
	rc.waitCount(before+1+21, 10*time.Second)
}

// TestHoldLimits: at most 500 held events per endpoint (the oldest
// dropped), and none older than 7 days.
func TestHoldLimits(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)
	wh := n.register(t, rc, nil)
	id := wh["id"].(string)
	if r := n.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"active": false}); r.Status != 200 || r.JSON()["disabled_reason"] != "manual" {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	// Older than 7 days: dropped even though the count is far below 500.
	stale := n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
	n.advance(7*24*time.Hour + time.Minute)
	fresh := n.raise(t, n.WorkspaceID, events.EmailDelivered, 3)
	testapp.Eventually(t, 10*time.Second, func() bool {
		return n.get(t, "/v1/webhooks/"+id)["held_count"].(float64) == 3
	}, "held_count = %v", n.get(t, "/v1/webhooks/"+id)["held_count"])
	if r := n.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"active": true}); r.Status != 200 {
		t.Fatalf("re-enable: %d %s", r.Status, r.Body)
	}
	hits := rc.waitCount(3, 10*time.Second)
	n.quiet(t, rc, 3)
	for _, h := range hits {
		if h.envelope.ID == stale[0] || !slices.Contains(fresh, h.envelope.ID) {
			t.Fatalf("released %s; want only %v", h.envelope.ID, fresh)
		}
	}

	// Beyond 500 the oldest are dropped.
	if r := n.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"active": false}); r.Status != 200 {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	oldest := n.raise(t, n.WorkspaceID, events.EmailDelivered, 5)
	n.advance(time.Second)
	kept := n.raise(t, n.WorkspaceID, events.EmailDelivered, 500)
	testapp.Eventually(t, 20*time.Second, func() bool {
		return n.get(t, "/v1/webhooks/"+id)["held_count"].(float64) == 500
	}, "held_count = %v", n.get(t, "/v1/webhooks/"+id)["held_count"])
	n.quiet(t, rc, 3)

	if r := n.Do("PATCH", "/v1/webhooks?id="+id, map[string]any{"active": true}); r.Status != 200 {
		t.Fatalf("re-enable: %d %s", r.Status, r.Body)
	}
	hits = rc.waitCount(503, 20*time.Second)
	n.quiet(t, rc, 503)
	got := map[string]bool{}
	for _, h := range hits[3:] {
		got[h.envelope.ID] = true
	}
	for _, e := range kept {
		if !got[e] {
			t.Fatalf("kept event %s not delivered", e)
		}
	}
	for _, e := range oldest {
		if got[e] {
			t.Fatalf("dropped event %s delivered", e)
		}
	}
}
