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
	"mailroom/internal/testkit/testapp"
)

func TestWebhookEndpointsAPI(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	rc := newReceiver(t, n.clock)

	// Create: defaults, legacy names read back as email.*, secret once.
	r := n.Do("POST", "/v1/webhooks", map[string]any{"url": rc.URL()})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	c := r.JSON()
	id := c["id"].(string)
	if !strings.HasPrefix(id, "wh_") || !strings.HasPrefix(c["secret"].(string), "whsec_") || c["active"] != true ||
		!slices.Equal(strs(c["events"]), []string{"email.delivered", "email.bounced", "email.complained"}) {
		t.Fatalf("created: %v", c)
	}
	r = n.Do("POST", "/v1/webhooks", map[string]any{"url": rc.URL(), "events": []string{"message.sent", "message.bounced", "email.sent"}})
	if r.Status != 201 || !slices.Equal(strs(r.JSON()["events"]), []string{"email.sent", "email.bounced"}) {
		t.Fatalf("legacy names: %d %s", r.Status, r.Body)
	}
	second := r.JSON()["id"].(string)

	for _, bad := range []map[string]any{
		{"url": rc.URL(), "events": []string{"email.opened"}},
		{"url": rc.URL(), "events": []string{"email.accepted"}},
		{"url": rc.URL(), "events": []string{}},
		{"url": "ftp://example.com/x"},
		{"url": ""},
		{"url": rc.URL(), "headers": map[string]string{"Bad Name": "x"}},
		{"url": rc.URL(), "surprise": true},
	} {
		if r := n.Do("POST", "/v1/webhooks", bad); r.Status != 400 || r.ErrCode() != "invalid_request" {
			t.Errorf("create %v: %d %s", bad, r.Status, r.Body)
		}
	}

	// List publishes the retry settings; reads never show the secret.
	l := n.get(t, "/v1/webhooks")
	if !slices.Equal(l["retry_delays_sec"].([]any), []any{0.0, 5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0}) ||
		l["max_attempts"].(float64) != 7 || l["retry_window_sec"].(float64) != 63305 ||
		l["auto_disable_after_silence_sec"].(float64) != 64800 || len(l["webhooks"].([]any)) != 2 {
		t.Fatalf("list: %v", l)
	}
	for _, w := range l["webhooks"].([]any) {
		if _, ok := w.(map[string]any)["secret"]; ok {
			t.Fatal("list shows a secret")
		}
	}
	g := n.get(t, "/v1/webhooks/"+id)
	if _, ok := g["secret"]; ok || g["held_count"].(float64) != 0 || g["previous_secret_valid_until"] != nil {
		t.Fatalf("get: %v", g)
	}

	// PATCH: omitted fields untouched, events replaced wholesale, no-op 400.
	r = n.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"email.sent"}})
	if r.Status != 200 || !slices.Equal(strs(r.JSON()["events"]), []string{"email.sent"}) || r.JSON()["url"] != rc.URL() {
		t.Fatalf("patch events: %d %s", r.Status, r.Body)
	}
	for _, body := range []any{map[string]any{}, map[string]any{"events": []string{"message.sent"}}, map[string]any{"active": true},
		map[string]any{"url": rc.URL()}, map[string]any{"rotate_secret": false}} {
		if r := n.Do("PATCH", "/v1/webhooks/"+id, body); r.Status != 400 || r.ErrCode() != "nothing_to_update" {
			t.Errorf("no-op patch %v: %d %s", body, r.Status, r.Body)
		}
	}
	r = n.Do("PATCH", "/v1/webhooks?id="+id, map[string]any{"headers": map[string]string{"X-A": "1"}})
	if r.Status != 200 || r.JSON()["headers"].(map[string]any)["X-A"] != "1" || !slices.Equal(strs(r.JSON()["events"]), []string{"email.sent"}) {
		t.Fatalf("deprecated patch: %d %s", r.Status, r.Body)
	}
	if r := n.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"nope"}}); r.Status != 400 || r.ErrCode() != "invalid_request" {
		t.Fatalf("patch unknown event: %d %s", r.Status, r.Body)
	}

	// Another workspace cannot see or touch it.
	_, otherKey := n.NewWorkspace("Other", "o@example.com")
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/webhooks/" + id}, {"PATCH", "/v1/webhooks/" + id}, {"DELETE", "/v1/webhooks/" + id},
		{"DELETE", "/v1/webhooks?id=" + id}, {"GET", "/v1/webhooks/deliveries?webhook_id=" + id},
	} {
		var body any
		if c.method == "PATCH" {
			body = map[string]any{"active": false}
		}
		if r := n.DoKey(otherKey, c.method, c.path, body); r.Status != 404 || r.ErrCode() != "not_found" {
			t.Errorf("other workspace %s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	if r := n.DoKey(otherKey, "POST", "/v1/webhooks/deliveries", map[string]any{"webhook_id": id}); r.Status != 404 {
		t.Errorf("other workspace test delivery: %d %s", r.Status, r.Body)
	}

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
