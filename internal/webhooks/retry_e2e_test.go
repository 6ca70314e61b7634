package webhooks_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/webhooks"
)

// TestRetryCurve runs the spec's 17.5-hour curve on a fake clock: an
// endpoint answering 500 gets exactly 7 attempts at exactly the curve's
// offsets, never earlier, and the event is then abandoned into the log.
func TestRetryCurve(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)
	rc.setAnswer(func(_ int, w http.ResponseWriter) {
		w.WriteHeader(500)
		w.Write([]byte("boom"))
	})
	wh := n.register(t, rc, nil)
	id := wh["id"].(string)
	ev := n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)[0]

	offsets := []time.Duration{0, 5 * time.Second, 305 * time.Second, 2105 * time.Second,
		9305 * time.Second, 27305 * time.Second, 63305 * time.Second}
	for k := 1; k <= 7; k++ {
		if k > 1 {
			wait := webhooks.RetryDelays[k-1]
			n.advance(wait - time.Millisecond)
			n.quiet(t, rc, k-1)
			n.advance(time.Millisecond)
		}
		hits := rc.waitCount(k, 10*time.Second)
		if got := hits[k-1].at.Sub(t0); got != offsets[k-1] {
			t.Fatalf("attempt %d at +%s, want +%s", k, got, offsets[k-1])
		}
		if hits[k-1].envelope.ID != ev || len(hits[k-1].verified) != 1 {
			t.Fatalf("attempt %d: id %s, verified %v", k, hits[k-1].envelope.ID, hits[k-1].verified)
		}
		ds := n.waitDeliveries(t, id, k+map[bool]int{true: 1}[k == 7])
		newest := ds[0]
		if k < 7 {
			r, ok := newest["retry"].(map[string]any)
			if !ok {
				t.Fatalf("attempt %d: no retry object on %v", k, newest)
			}
			wantAt := t0.Add(offsets[k]).Format(time.RFC3339)
			if r["next_attempt"].(float64) != float64(k+1) || r["attempts_made"].(float64) != float64(k) ||
				r["attempts_remaining"].(float64) != float64(7-k) || r["next_attempt_at"] != wantAt {
				t.Fatalf("attempt %d: retry = %v, want next_attempt_at %s", k, r, wantAt)
			}
			if newest["status_code"].(float64) != 500 || newest["response_body"] != "boom" || !strings.Contains(newest["error"].(string), "500") {
				t.Fatalf("attempt %d row = %v", k, newest)
			}
			// Only the newest attempt carries the retry object.
			for _, older := range ds[1:] {
				if older["retry"] != nil {
					t.Fatalf("older row carries retry: %v", older)
				}
			}
		}
	}
	ds := n.waitDeliveries(t, id, 8)
	abandoned := ds[0]
	if abandoned["status_code"] != nil || abandoned["retry"] != nil || !strings.Contains(abandoned["error"].(string), "abandoned after 7 attempts") ||
		!strings.Contains(abandoned["error"].(string), "500") || abandoned["event_id"] != ev {
		t.Fatalf("abandoned row = %v", abandoned)
	}
	if ds[1]["retry"] != nil || ds[1]["status_code"].(float64) != 500 {
		t.Fatalf("7th attempt row = %v", ds[1])
	}
	// Nothing more, ever.
	n.advance(48 * time.Hour)
	n.quiet(t, rc, 7)
	got := n.get(t, "/v1/webhooks/"+id)
	if got["consecutive_failures"].(float64) != 7 || got["active"] != true {
		t.Fatalf("endpoint = %v", got)
	}
}

// TestRetryAfter: an endpoint's own Retry-After replaces the curve's wait
// (a 429 included), capped at one hour.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)
	rc.setAnswer(func(k int, w http.ResponseWriter) {
		switch k {
		case 1:
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", "86400")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	wh := n.register(t, rc, nil)
	n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
	rc.waitCount(1, 10*time.Second)
	ds := n.waitDeliveries(t, wh["id"].(string), 1)
	if r := ds[0]["retry"].(map[string]any); r["next_attempt_at"] != t0.Add(120*time.Second).Format(time.RFC3339) {
		t.Fatalf("retry after 429 = %v", r)
	}
	n.advance(119 * time.Second)
	n.quiet(t, rc, 1)
	n.advance(time.Second)
	hits := rc.waitCount(2, 10*time.Second)
	if hits[1].at != t0.Add(120*time.Second) {
		t.Fatalf("second attempt at %s", hits[1].at)
	}
	n.waitDeliveries(t, wh["id"].(string), 2)
	n.advance(time.Hour - time.Second)
	n.quiet(t, rc, 2)
	n.advance(time.Second)
	hits = rc.waitCount(3, 10*time.Second)
	if hits[2].at != t0.Add(120*time.Second+time.Hour) {
		t.Fatalf("third attempt at %s, want the 1 h cap", hits[2].at.Sub(t0))
	}
	ds = n.waitDeliveries(t, wh["id"].(string), 3)
	if ds[0]["status_code"].(float64) != 204 || ds[0]["retry"] != nil {
		t.Fatalf("success row = %v", ds[0])
	}
}

// TestTimeoutIsFailure: an endpoint slower than the timeout has failed,
// even if it answers 200 afterwards.
func TestTimeoutIsFailure(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	n.Webhooks().SetTimeout(300 * time.Millisecond)
	rc := newReceiver(t, n.clock)
	// It answers 200 only when the test ends, long after the node gave up.
	late := make(chan struct{})
	t.Cleanup(func() { close(late) }) // before the receiver closes: cleanups run last-first
	rc.setAnswer(func(_ int, w http.ResponseWriter) {
		<-late
		w.WriteHeader(200)
	})
	wh := n.register(t, rc, nil)
	n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
	ds := n.waitDeliveries(t, wh["id"].(string), 1)
	if ds[0]["status_code"] != nil || !strings.Contains(ds[0]["error"].(string), "timeout") || ds[0]["retry"] == nil {
		t.Fatalf("row = %v", ds[0])
	}
}

// TestSlowEndpointDoesNotStarveOthers: with a small pool, an endpoint that
// never answers in time takes at most half the workers, and another
// endpoint's events still go out at once.
func TestSlowEndpointDoesNotStarveOthers(t *testing.T) {
	t.Parallel()
	n := startNode(t, testapp.WithEnv("MAILROOM_WEBHOOK_CONCURRENCY", "4"))
	n.Webhooks().SetTimeout(time.Second)
	slow := newReceiver(t, n.clock)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow.setAnswer(func(_ int, w http.ResponseWriter) {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	})
	fast := newReceiver(t, n.clock)
	n.register(t, slow, map[string]any{"events": []string{"email.bounced"}})
	n.register(t, fast, map[string]any{"events": []string{"email.delivered"}})
	n.raise(t, n.WorkspaceID, events.EmailBounced, 40)
	slow.waitCount(1, 10*time.Second)
	start := time.Now()
	n.raise(t, n.WorkspaceID, events.EmailDelivered, 40)
	fast.waitCount(40, 10*time.Second)
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Fatalf("fast endpoint waited %s behind the slow one", took)
	}
	if c := slow.count(); c > 2*2 {
		t.Fatalf("slow endpoint got %d requests in flight at once", c)
	}
}
