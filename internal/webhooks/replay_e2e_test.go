package webhooks_test

import (
	"slices"
	"testing"
	"time"

	"mailroom/internal/events"
)

// TestReplayByEventID: POST /v1/webhooks/deliveries with a whd_ event id
// replays the event, same id and body with a fresh signature, to every
// active endpoint subscribed to its type (including one registered after
// the event), or only to webhook_id when given; success is true only when
// every endpoint accepted.
func TestReplayByEventID(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	ra, rb, rc, rd, re := newReceiver(t, n.clock), newReceiver(t, n.clock), newReceiver(t, n.clock), newReceiver(t, n.clock), newReceiver(t, n.clock)
	a := n.register(t, ra, nil)["id"].(string) // default events: delivered, bounced, complained
	b := n.register(t, rb, map[string]any{"events": []string{"email.delivered"}})["id"].(string)
	c := n.register(t, rc, map[string]any{"events": []string{"email.bounced"}})["id"].(string)
	e := n.register(t, re, map[string]any{"events": []string{"email.delivered"}})["id"].(string)
	if r := n.Do("PATCH", "/v1/webhooks/"+e, map[string]any{"active": false}); r.Status != 200 {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	ev := n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)[0]
	orig := ra.waitCount(1, 10*time.Second)[0]
	rb.waitCount(1, 10*time.Second)
	n.waitDeliveries(t, a, 1)
	n.waitDeliveries(t, b, 1)
	d := n.register(t, rd, map[string]any{"events": []string{"email.delivered"}})["id"].(string)

	n.advance(time.Minute)
	r := n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": ev})
	res := r.JSON()
	if r.Status != 200 || res["success"] != true || res["event_id"] != ev || res["webhook_id"] != a || res["status_code"].(float64) != 200 {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	var got []string
	for _, x := range res["results"].([]any) {
		m := x.(map[string]any)
		if m["success"] != true || m["event_id"] != ev || m["event"] != "email.delivered" || m["delivery_id"] == "" {
			t.Fatalf("result %v", m)
		}
		got = append(got, m["webhook_id"].(string))
	}
	if !slices.Equal(got, []string{a, b, d}) {
		t.Fatalf("replayed to %v, want %v", got, []string{a, b, d})
	}
	for _, x := range []*receiver{ra, rb, rd} {
		h := x.all() // the answer came after the attempts
		last := h[len(h)-1]
		if last.envelope.ID != ev || string(last.body) != string(orig.body) || len(last.verified) != 1 || last.ts != t0.Add(time.Minute).Unix() {
			t.Fatalf("replayed %s (ts %d, verified %v)", last.body, last.ts, last.verified)
		}
	}
	if ra.count() != 2 || rb.count() != 2 || rd.count() != 1 || rc.count() != 0 || re.count() != 0 {
		t.Fatalf("hits a=%d b=%d d=%d c=%d e=%d", ra.count(), rb.count(), rd.count(), rc.count(), re.count())
	}
	if ds := n.deliveries(t, d); len(ds) != 1 || ds[0]["event_id"] != ev || ds[0]["status_code"].(float64) != 200 {
		t.Fatalf("log of the new endpoint: %v", ds)
	}

	// webhook_id narrows the replay to one endpoint, whatever it subscribes to.
	r = n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": ev, "webhook_id": c})
	if r.Status != 200 || r.JSON()["success"] != true || len(r.JSON()["results"].([]any)) != 1 || r.JSON()["webhook_id"] != c {
		t.Fatalf("replay to one: %d %s", r.Status, r.Body)
	}
	if h := rc.waitCount(1, time.Second); h[0].envelope.ID != ev || string(h[0].body) != string(orig.body) || ra.count() != 2 || rb.count() != 2 {
		t.Fatalf("replay to one reached %s; a=%d b=%d", h[0].body, ra.count(), rb.count())
	}

	// One endpoint failing makes the whole answer unsuccessful; each result
	// says what its endpoint answered.
	rb.setAnswer(answerStatus(500))
	r = n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": ev})
	res = r.JSON()
	if r.Status != 200 || res["success"] != false || res["status_code"].(float64) != 200 {
		t.Fatalf("replay with a failure: %d %s", r.Status, r.Body)
	}
	if second := res["results"].([]any)[1].(map[string]any); second["webhook_id"] != b || second["success"] != false || second["status_code"].(float64) != 500 {
		t.Fatalf("failed result %v", second)
	}

	// An event no endpoint was ever sent is found in the event log.
	sent := n.raise(t, n.WorkspaceID, events.EmailSent, 1)[0]
	if r := n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": sent}); r.Status != 404 || r.ErrCode() != "not_found" {
		t.Fatalf("no subscriber: %d %s", r.Status, r.Body)
	}
	r = n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": sent, "webhook_id": c})
	if h := rc.waitCount(2, time.Second); r.Status != 200 || h[1].envelope.ID != sent || h[1].envelope.Event != "email.sent" || h[1].envelope.Sequence != 2 {
		t.Fatalf("replay of an unsent event: %d %s -> %s", r.Status, r.Body, h[1].body)
	}

	// A test event's id replays its stored body.
	rd.setAnswer(answerStatus(204))
	test := n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"webhook_id": d}).JSON()
	testBody := rd.waitCount(3, time.Second)[2].body // after two replays of ev
	r = n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": test["event_id"], "webhook_id": d})
	if h := rd.waitCount(4, time.Second); r.Status != 200 || r.JSON()["success"] != true || string(h[3].body) != string(testBody) {
		t.Fatalf("replay of a test event: %d %s", r.Status, r.Body)
	}

	// Unknown ids, other workspaces, and a delivery row id with webhook_id.
	_, otherKey := n.NewWorkspace("Other", "o@example.com")
	for _, c := range []struct {
		key    string
		body   map[string]any
		status int
	}{
		{"", map[string]any{"delivery_id": "whd_00000000000000000000000000"}, 404},
		{"", map[string]any{"delivery_id": ev, "webhook_id": "wh_00000000000000000000000000"}, 404},
		{otherKey, map[string]any{"delivery_id": ev}, 404},
		{otherKey, map[string]any{"delivery_id": ev, "webhook_id": a}, 404},
		{"", map[string]any{"delivery_id": test["delivery_id"], "webhook_id": d}, 400},
	} {
		key := n.Key
		if c.key != "" {
			key = c.key
		}
		r := n.DoKey(key, "POST", "/v1/webhooks/deliveries", c.body)
		if r.Status != c.status {
			t.Errorf("%v: %d %s", c.body, r.Status, r.Body)
		}
	}
	if ra.count() != 3 || re.count() != 0 {
		t.Fatalf("refused replays reached endpoints: a=%d e=%d", ra.count(), re.count())
	}
}
