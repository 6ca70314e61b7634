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
	id, oldSecret := wh["id"].(string), wh["secret"].(string)
	r := n.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"rotate_secret": true})
	if r.Status != 200 {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	newSecret := r.JSON()["secret"].(string)
	until, _ := time.Parse(time.RFC3339, r.JSON()["previous_secret_valid_until"].(string))
	if newSecret == oldSecret || !until.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("rotate answered %s", r.Body)
	}
	if g := n.get(t, "/v1/webhooks/"+id); g["previous_secret_valid_until"] == nil || g["secret"] != nil {
		t.Fatalf("get during grace: %v", g)
	}
	rc.setSecrets(oldSecret, newSecret)
	n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
	h := rc.waitCount(1, 10*time.Second)[0]
	if strings.Count(h.header.Get("X-Svc-Signature"), "v1=") != 2 || len(h.verified) != 2 {
		t.Fatalf("during grace: %s verified by %d secrets", h.header.Get("X-Svc-Signature"), len(h.verified))
	}
	n.advance(24*time.Hour + time.Second)
	n.raise(t, n.WorkspaceID, events.EmailDelivered, 1)
	h = rc.waitCount(2, 10*time.Second)[1]
	if strings.Count(h.header.Get("X-Svc-Signature"), "v1=") != 1 || !slices.Equal(h.verified, []string{newSecret}) {
		t.Fatalf("after grace: %s verified by %v", h.header.Get("X-Svc-Signature"), h.verified)
	}
	if g := n.get(t, "/v1/webhooks/"+id); g["previous_secret_valid_until"] != nil {
		t.Fatalf("get after grace: %v", g)
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
	wh := n.register(t, rc, nil)
	id := wh["id"].(string)
	other := newReceiver(t, n.clock)
	n.register(t, other, nil)
	evs := n.raise(t, n.WorkspaceID, events.EmailDelivered, 3)
	rc.waitCount(3, 10*time.Second)
	other.waitCount(3, 10*time.Second)
	n.waitDeliveries(t, id, 3)

	// Pagination over this endpoint's 3 rows, 2 per page.
	page1 := n.get(t, "/v1/webhooks/deliveries?limit=2&webhook_id="+id)
	if len(page1["deliveries"].([]any)) != 2 || page1["has_more"] != true || page1["next_cursor"] == nil {
		t.Fatalf("page 1: %v", page1)
	}
	page2 := n.get(t, "/v1/webhooks/deliveries?limit=2&webhook_id="+id+"&cursor="+page1["next_cursor"].(string))
	if len(page2["deliveries"].([]any)) != 1 || page2["has_more"] != false || page2["next_cursor"] != nil {
		t.Fatalf("page 2: %v", page2)
	}
	seen := map[string]bool{}
	for _, p := range []map[string]any{page1, page2} {
		for _, d := range p["deliveries"].([]any) {
			m := d.(map[string]any)
			if m["webhook_id"] != id || m["status_code"].(float64) != 202 || m["response_body"] != `{"ok":true}` || m["event"] != "email.delivered" {
				t.Fatalf("row %v", m)
			}
			seen[m["event_id"].(string)] = true
		}
	}
	for _, e := range evs {
		if !seen[e] {
			t.Fatalf("event %s missing from the log", e)
		}
	}
	if all := n.get(t, "/v1/webhooks/deliveries"); len(all["deliveries"].([]any)) != 6 {
		t.Fatalf("unfiltered log has %d rows", len(all["deliveries"].([]any)))
	}
	if r := n.Do("GET", "/v1/webhooks/deliveries?limit=101", nil); r.Status != 422 {
		t.Fatalf("limit 101: %d", r.Status)
	}

	// Replay: same event id, same body, fresh signature.
	row := page2["deliveries"].([]any)[0].(map[string]any)
	var orig hit
	for _, h := range rc.all() {
		if h.envelope.ID == row["event_id"] {
			orig = h
		}
	}
	n.advance(time.Minute)
	r := n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": row["id"]})
	if r.Status != 200 || r.JSON()["success"] != true || r.JSON()["status_code"].(float64) != 202 ||
		r.JSON()["response_body"] != `{"ok":true}` || r.JSON()["event_id"] != row["event_id"] {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	h := rc.all()[3]
	if h.envelope.ID != row["event_id"] || string(h.body) != string(orig.body) || len(h.verified) != 1 || h.ts != t0.Add(time.Minute).Unix() {
		t.Fatalf("replayed %s (ts %d)", h.body, h.ts)
	}

	// Test event: answers what the endpoint answered.
	rc.setAnswer(func(_ int, w http.ResponseWriter) { w.WriteHeader(418); w.Write([]byte("teapot")) })
	r = n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"webhook_id": id})
	res := r.JSON()
	if r.Status != 200 || res["success"] != false || res["status_code"].(float64) != 418 || res["response_body"] != "teapot" ||
		!strings.Contains(res["error"].(string), "418") || !strings.HasPrefix(res["event_id"].(string), "whd_") {
		t.Fatalf("test delivery: %d %s", r.Status, r.Body)
	}
	th := rc.all()[4]
	if th.envelope.ID != res["event_id"] || th.envelope.Event != "email.delivered" || !strings.Contains(string(th.envelope.Data), `"test_mode":true`) {
		t.Fatalf("test event %s", th.body)
	}
	// A test event is replayable too.
	rc.setAnswer(answerStatus(200))
	r = n.Do("POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": res["delivery_id"]})
	if r.Status != 200 || r.JSON()["success"] != true || string(rc.all()[5].body) != string(th.body) {
		t.Fatalf("replay of test: %d %s", r.Status, r.Body)
	}
	for _, bad := range []map[string]any{{}, {"webhook_id": id, "delivery_id": row["id"]}} {
		if r := n.Do("POST", "/v1/webhooks/deliveries", bad); r.Status != 400 {
			t.Errorf("%v: %d", bad, r.Status)
		}
	}
	_, otherKey := n.NewWorkspace("Other", "o@example.com")
	if r := n.DoKey(otherKey, "POST", "/v1/webhooks/deliveries", map[string]any{"delivery_id": row["id"]}); r.Status != 404 {
		t.Fatalf("other workspace replay: %d %s", r.Status, r.Body)
	}
	if r := n.DoKey(otherKey, "GET", "/v1/webhooks/deliveries", nil); r.Status != 200 || len(r.JSON()["deliveries"].([]any)) != 0 {
		t.Fatalf("other workspace log: %d %s", r.Status, r.Body)
	}
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
