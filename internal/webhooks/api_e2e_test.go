package webhooks_test

import (
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

type (
	sc    = scenario.Case
	shape = scenario.Shape
)

func TestWebhookEndpointsAPI(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)

	_, otherKey := n.NewWorkspace("Other", "o@example.com")
	s := scenario.New(n.App)
	s.Set("url", rc.URL())
	s.Set("other", otherKey)
	bad := func(name string, body map[string]any) sc {
		return sc{Name: "create refused: " + name, Method: "POST", Path: "/v1/webhooks", Body: body, Status: 400, Code: "invalid_request"}
	}
	noop := func(name string, body map[string]any) sc {
		return sc{Name: "no-op patch: " + name, Method: "PATCH", Path: "/v1/webhooks/{id}", Body: body, Status: 400, Code: "nothing_to_update"}
	}
	elsewhere := func(method, path string, body any) sc {
		return sc{Name: "other workspace: " + method + " " + path, Method: method, Path: path, Key: "{other}", Body: body, Status: 404, Code: "not_found"}
	}
	s.Run(t,
		// Create: defaults, legacy names read back as email.*, secret once.
		sc{Name: "create with defaults", Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "{url}"}, Status: 201,
			Shape: shape{"id": scenario.Prefix("wh_"), "secret": scenario.Prefix("whsec_"), "active": true,
				"events": []any{"email.delivered", "email.bounced", "email.complained"}},
			Save: map[string]string{"id": "id"}},
		sc{Name: "legacy event names read back as email.*", Method: "POST", Path: "/v1/webhooks", Status: 201,
			Body:  map[string]any{"url": "{url}", "events": []string{"message.sent", "message.bounced", "email.sent"}},
			Shape: shape{"events": []any{"email.sent", "email.bounced"}}, Save: map[string]string{"second": "id"}},
		bad("an event that is no webhook", map[string]any{"url": "{url}", "events": []string{"email.opened"}}),
		bad("a timeline-only event", map[string]any{"url": "{url}", "events": []string{"email.accepted"}}),
		bad("no events", map[string]any{"url": "{url}", "events": []string{}}),
		bad("an ftp url", map[string]any{"url": "ftp://example.com/x"}),
		bad("an empty url", map[string]any{"url": ""}),
		bad("a header name with a space", map[string]any{"url": "{url}", "headers": map[string]string{"Bad Name": "x"}}),
		bad("an unknown field", map[string]any{"url": "{url}", "surprise": true}),

		// List publishes the retry settings; reads never show the secret.
		sc{Name: "list with the retry settings", Method: "GET", Path: "/v1/webhooks", Status: 200, Shape: shape{
			"retry_delays_sec": []any{0, 5, 300, 1800, 7200, 18000, 36000}, "max_attempts": 7, "retry_window_sec": 63305,
			"auto_disable_after_silence_sec": 64800, "webhooks": scenario.All(scenario.Len(2), scenario.Each(shape{"secret": scenario.Absent}))}},
		sc{Name: "get shows no secret", Method: "GET", Path: "/v1/webhooks/{id}", Status: 200,
			Shape: shape{"secret": scenario.Absent, "held_count": 0, "previous_secret_valid_until": nil}},

		// PATCH: omitted fields untouched, events replaced wholesale, no-op 400.
		sc{Name: "patch replaces events, keeps the url", Method: "PATCH", Path: "/v1/webhooks/{id}", Body: map[string]any{"events": []string{"email.sent"}},
			Status: 200, Shape: shape{"events": []any{"email.sent"}, "url": scenario.Var("url")}},
		noop("empty", map[string]any{}),
		noop("the same events by their legacy name", map[string]any{"events": []string{"message.sent"}}),
		noop("already active", map[string]any{"active": true}),
		noop("the same url", map[string]any{"url": "{url}"}),
		noop("rotate_secret false", map[string]any{"rotate_secret": false}),
		sc{Name: "deprecated patch by ?id=", Method: "PATCH", Path: "/v1/webhooks?id={id}", Body: map[string]any{"headers": map[string]string{"X-A": "1"}},
			Status: 200, Shape: shape{"headers": shape{"X-A": "1"}, "events": []any{"email.sent"}}},
		sc{Name: "patch to an unknown event", Method: "PATCH", Path: "/v1/webhooks/{id}", Body: map[string]any{"events": []string{"nope"}},
			Status: 400, Code: "invalid_request"},

		// Another workspace cannot see or touch it.
		elsewhere("GET", "/v1/webhooks/{id}", nil),
		elsewhere("PATCH", "/v1/webhooks/{id}", map[string]any{"active": false}),
		elsewhere("DELETE", "/v1/webhooks/{id}", nil),
		elsewhere("DELETE", "/v1/webhooks?id={id}", nil),
		elsewhere("GET", "/v1/webhooks/deliveries?webhook_id={id}", nil),
		elsewhere("POST", "/v1/webhooks/deliveries", map[string]any{"webhook_id": "{id}"}),
	)
	id, second := s.Get("id"), s.Get("second")

	// DELETE, both spellings; queued deliveries are dropped.
	rc.setAnswer(answerStatus(500))
	n.raise(t, n.WorkspaceID, events.EmailSent, 1)
	rc.waitCount(2, 10*time.Second) // both endpoints subscribe to email.sent
	if r := n.Do("DELETE", "/v1/webhooks/"+id, nil); r.Status != 200 || r.JSON()["deleted"] != id {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := n.Do("DELETE", "/v1/webhooks?id="+second, nil); r.Status != 200 || r.JSON()["deleted"] != second {
		t.Fatalf("deprecated delete: %d %s", r.Status, r.Body)
	}
	n.advance(time.Hour)
	n.quiet(t, rc, 2)
	if r := n.Do("GET", "/v1/webhooks/"+id, nil); r.Status != 404 {
		t.Fatalf("get deleted: %d", r.Status)
	}
	var left int
	n.DB.QueryRow(t.Context(), `SELECT COUNT(*) FROM webhook_deliveries`).Scan(&left)
	if left != 0 {
		t.Fatalf("%d queued deliveries left after delete", left)
	}
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestSecretRotation: after rotate_secret, deliveries carry one v1 per
// valid secret until previous_secret_valid_until, then only the new one.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)
	wh := n.register(t, rc, nil)
	s := scenario.New(n.App)
	s.Set("id", wh["id"].(string))
	s.Set("old", wh["secret"].(string))
	graceEnd := t0.Add(24 * time.Hour).Format(time.RFC3339)
	s.Run(t, sc{Name: "rotate answers a new secret and the old one's end", Method: "PATCH", Path: "/v1/webhooks/{id}",
		Body: map[string]any{"rotate_secret": true}, Status: 200, Save: map[string]string{"new": "secret"},
		Shape: shape{"secret": scenario.All(scenario.Prefix("whsec_"), scenario.NotVar("old")), "previous_secret_valid_until": graceEnd}})
	oldSecret, newSecret := s.Get("old"), s.Get("new")
	rc.setSecrets(oldSecret, newSecret)

	phases := []struct {
		name       string
		after      time.Duration // from the rotation
		signedBy   []string
		validUntil any // previous_secret_valid_until read back
	}{
		{"during the grace", 0, []string{oldSecret, newSecret}, graceEnd},
		{"after the grace", 24*time.Hour + time.Second, []string{newSecret}, nil},
	}
	for i, ph := range phases {
		n.advance(ph.after)
		n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
		h := rc.waitCount(i+1, 10*time.Second)[i]
		if sig := h.header.Get("X-Svc-Signature"); strings.Count(sig, "v1=") != len(ph.signedBy) || !slices.Equal(h.verified, ph.signedBy) {
			t.Fatalf("%s: %s verified by %d secrets, want %d", ph.name, sig, len(h.verified), len(ph.signedBy))
		}
		s.Do(t, sc{Name: "get " + ph.name, Method: "GET", Path: "/v1/webhooks/{id}", Status: 200,
			Shape: shape{"secret": scenario.Absent, "previous_secret_valid_until": ph.validUntil}})
	}
}

// TestDeliveryLogTestAndReplay: the log pages with cursors and filters by
// endpoint; a test event answers what the endpoint answered; a replay
// resends the same event id and body.
func TestDeliveryLogTestAndReplay(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)
	rc.setAnswer(func(_ int, w http.ResponseWriter) { w.WriteHeader(202); w.Write([]byte(`{"ok":true}`)) })
	id := n.register(t, rc, nil)["id"].(string)
	other := newReceiver(t, n.clock)
	n.register(t, other, nil)
	evs := n.raise(t, n.WorkspaceID, events.EmailDelivered, 3)
	rc.waitCount(3, 10*time.Second)
	other.waitCount(3, 10*time.Second)
	n.waitDeliveries(t, id, 3)

	_, otherKey := n.NewWorkspace("Other", "o@example.com")
	s := scenario.New(n.App)
	s.Set("id", id)
	s.Set("other", otherKey)
	var logged []string // event ids the two pages list
	row := shape{"webhook_id": id, "status_code": 202, "response_body": `{"ok":true}`, "event": "email.delivered"}
	listed := func(t testing.TB, r *testapp.Response) {
		for _, d := range r.JSON()["deliveries"].([]any) {
			logged = append(logged, d.(map[string]any)["event_id"].(string))
		}
	}
	// The log: this endpoint's 3 rows, 2 per page, and both endpoints' 6.
	s.Run(t,
		sc{Name: "page 1", Method: "GET", Path: "/v1/webhooks/deliveries?limit=2&webhook_id={id}", Status: 200,
			Shape: shape{"deliveries": scenario.All(scenario.Len(2), scenario.Each(row)), "has_more": true, "next_cursor": scenario.Prefix("")},
			Save:  map[string]string{"cursor": "next_cursor"}, Check: listed},
		sc{Name: "page 2", Method: "GET", Path: "/v1/webhooks/deliveries?limit=2&webhook_id={id}&cursor={cursor}", Status: 200,
			Shape: shape{"deliveries": scenario.All(scenario.Len(1), scenario.Each(row)), "has_more": false, "next_cursor": nil},
			Save:  map[string]string{"row": "deliveries.0.id", "event": "deliveries.0.event_id"}, Check: listed},
		sc{Name: "unfiltered", Method: "GET", Path: "/v1/webhooks/deliveries", Status: 200, Shape: shape{"deliveries": scenario.Len(6)}},
		sc{Name: "limit over 100", Method: "GET", Path: "/v1/webhooks/deliveries?limit=101", Status: 422, Code: "invalid_limit"},
	)
	if slices.Sort(logged); !slices.Equal(logged, slices.Sorted(slices.Values(evs))) {
		t.Fatalf("the pages list events %v, want %v", logged, evs)
	}

	// Replay: same event id, same body, fresh signature.
	var orig hit
	for _, h := range rc.all() {
		if h.envelope.ID == s.Get("event") {
			orig = h
		}
	}
	n.advance(time.Minute)
	s.Run(t, sc{Name: "replay", Method: "POST", Path: "/v1/webhooks/deliveries", Body: map[string]any{"delivery_id": "{row}"}, Status: 200,
		Shape: shape{"success": true, "status_code": 202, "response_body": `{"ok":true}`, "event_id": scenario.Var("event")}})
	if h := rc.all()[3]; h.envelope.ID != orig.envelope.ID || string(h.body) != string(orig.body) || len(h.verified) != 1 || h.ts != t0.Add(time.Minute).Unix() {
		t.Fatalf("replayed %s (ts %d)", h.body, h.ts)
	}

	// A test event answers what the endpoint answered, and is replayable too.
	rc.setAnswer(func(_ int, w http.ResponseWriter) { w.WriteHeader(418); w.Write([]byte("teapot")) })
	s.Run(t, sc{Name: "test event", Method: "POST", Path: "/v1/webhooks/deliveries", Body: map[string]any{"webhook_id": "{id}"}, Status: 200,
		Shape: shape{"success": false, "status_code": 418, "response_body": "teapot", "event_id": scenario.Prefix("whd_")},
		Save:  map[string]string{"test": "delivery_id", "testEvent": "event_id"},
		Check: func(t testing.TB, r *testapp.Response) {
			if e, _ := r.JSON()["error"].(string); !strings.Contains(e, "418") {
				t.Fatalf("test delivery's error %q does not name the status", e)
			}
		}})
	th := rc.all()[4]
	if th.envelope.ID != s.Get("testEvent") || th.envelope.Event != "email.delivered" || !strings.Contains(string(th.envelope.Data), `"test_mode":true`) {
		t.Fatalf("test event %s", th.body)
	}
	rc.setAnswer(answerStatus(200))
	s.Run(t,
		sc{Name: "replay of the test event", Method: "POST", Path: "/v1/webhooks/deliveries", Body: map[string]any{"delivery_id": "{test}"}, Status: 200,
			Shape: shape{"success": true},
			Check: func(t testing.TB, _ *testapp.Response) {
				if got := rc.all()[5].body; string(got) != string(th.body) {
					t.Fatalf("replayed %s, want %s", got, th.body)
				}
			}},
		sc{Name: "neither id", Method: "POST", Path: "/v1/webhooks/deliveries", Body: map[string]any{}, Status: 400, Code: "invalid_request"},
		sc{Name: "both ids", Method: "POST", Path: "/v1/webhooks/deliveries", Body: map[string]any{"webhook_id": "{id}", "delivery_id": "{row}"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "another workspace replays it", Method: "POST", Path: "/v1/webhooks/deliveries", Key: "{other}",
			Body: map[string]any{"delivery_id": "{row}"}, Status: 404, Code: "not_found"},
		sc{Name: "another workspace's log is empty", Method: "GET", Path: "/v1/webhooks/deliveries", Key: "{other}", Status: 200,
			Shape: shape{"deliveries": scenario.Len(0)}},
	)
}

// TestPrivateAddressesRefused: without MAILROOM_WEBHOOK_ALLOW_PRIVATE, only
// https is registered, literal private addresses are refused at once, and a
// name that resolves to loopback fails at connect time.
func TestPrivateAddressesRefused(t *testing.T) {
	t.Parallel()
	n := startNode(t, testapp.WithEnv("MAILROOM_WEBHOOK_ALLOW_PRIVATE", "false"))
	for _, u := range []string{"http://example.com/hooks", "https://127.0.0.1/hooks", "https://10.0.0.8/x", "https://169.254.169.254/latest", "https://localhost/x", "https://[::1]/x"} {
		if r := n.Do("POST", "/v1/webhooks", map[string]any{"url": u}); r.Status != 400 || r.ErrCode() != "invalid_request" {
			t.Errorf("%s: %d %s", u, r.Status, r.Body)
		}
	}
	host, _ := os.Hostname()
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 || !net.ParseIP(addrs[0]).IsLoopback() {
		t.Skipf("host name %q does not resolve to loopback here (%v %v)", host, addrs, err)
	}
	rc := newReceiver(t, n.clock)
	_, port, _ := net.SplitHostPort(rc.srv.Listener.Addr().String())
	r := n.Do("POST", "/v1/webhooks", map[string]any{"url": "https://" + host + ":" + port + "/hooks"})
	if r.Status != 201 {
		t.Fatalf("create with a name: %d %s", r.Status, r.Body)
	}
	r = n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"webhook_id": r.JSON()["id"]})
	if r.Status != 200 || r.JSON()["success"] != false || r.JSON()["status_code"] != nil || !strings.Contains(r.JSON()["error"].(string), "address not allowed by the outbound policy (127.0.0.1)") {
		t.Fatalf("test delivery to loopback: %d %s", r.Status, r.Body)
	}
	if rc.count() != 0 {
		t.Fatal("the receiver was reached")
	}
}
