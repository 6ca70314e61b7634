package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// TestSDKListShape: every list answer carries object "list" and data[]
// (the rows the spec's own key carries, which stays) for the Resend SDKs.
func TestSDKListShape(t *testing.T) {
	a := testapp.Start(t)
	wantStatus(t, a.Do("POST", "/v1/segments", map[string]any{"name": "S"}), http.StatusCreated)
	wantStatus(t, a.Do("POST", "/v1/audiences", map[string]any{"name": "A"}), http.StatusCreated)
	wantStatus(t, a.Do("POST", "/v1/contacts", map[string]any{"email": "ann@example.com"}), http.StatusCreated)
	wantStatus(t, a.Do("POST", "/v1/suppressions", map[string]any{"email": "sup@example.com"}), http.StatusCreated)
	for path, key := range map[string]string{"/v1/segments": "segments", "/v1/audiences": "audiences", "/v1/contacts": "contacts",
		"/v1/suppressions": "suppressions", "/v1/templates": "templates", "/v1/topics": "topics", "/v1/broadcasts": "broadcasts",
		"/v1/automations": "automations", "/v1/emails": "", "/v1/api-keys": "api_keys", "/v1/domains": "domains", "/v1/webhooks": "webhooks"} {
		body := wantStatus(t, a.Do("GET", path, nil), http.StatusOK)
		data, ok := body["data"].([]any)
		if body["object"] != "list" || !ok {
			t.Errorf("%s: object %v, data %v", path, body["object"], body["data"])
			continue
		}
		if key != "" {
			if own, ok := body[key].([]any); !ok || len(own) != len(data) {
				t.Errorf("%s: the spec's %s %v beside data %v", path, key, body[key], data)
			}
		}
	}
}

// TestBroadcastSDKAdditions: create{send} and scheduled_at phrases as the
// Resend SDKs send them; RFC 3339 still works, and what neither reads keeps
// the spec's 400.
func TestBroadcastSDKAdditions(t *testing.T) {
	a := testapp.Start(t)
	aud := wantStatus(t, a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}), http.StatusCreated)["id"].(string)
	wantStatus(t, a.Do("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "m1@example.net"}}), http.StatusCreated)
	draft := map[string]any{"audience_id": aud, "from": sandboxFrom, "subject": "News", "text": "x"}

	b := wantStatus(t, a.Do("POST", "/v1/broadcasts", draft), http.StatusCreated)
	s := wantStatus(t, a.Do("POST", "/v1/broadcasts/"+b["id"].(string)+"/send", map[string]any{"scheduled_at": "in 1 hour", "broadcast_id": b["id"]}), http.StatusOK)
	at, err := time.Parse(time.RFC3339, s["scheduled_at"].(string))
	if s["status"] != "scheduled" || err != nil || time.Until(at) < 50*time.Minute || time.Until(at) > 70*time.Minute {
		t.Fatalf("send in 1 hour: %v", s)
	}

	b2 := wantStatus(t, a.Do("POST", "/v1/broadcasts", draft), http.StatusCreated)
	r := a.Do("POST", "/v1/broadcasts/"+b2["id"].(string)+"/send", map[string]any{"scheduled_at": "someday"})
	if body := wantStatus(t, r, http.StatusBadRequest); r.ErrCode() != "invalid_request" || body["message"] == "" {
		t.Fatalf("unreadable scheduled_at: %s", r.Body)
	}
	if r := a.Do("POST", "/v1/broadcasts/"+b2["id"].(string)+"/send", map[string]any{"broadcast_id": "bc_other"}); r.Status != http.StatusBadRequest {
		t.Fatalf("another broadcast_id: %d %s", r.Status, r.Body)
	}

	sched := map[string]any{"send": true, "scheduled_at": time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)}
	for k, v := range draft {
		sched[k] = v
	}
	if c := wantStatus(t, a.Do("POST", "/v1/broadcasts", sched), http.StatusCreated); c["status"] != "scheduled" {
		t.Fatalf("create{send, scheduled_at}: %v", c)
	}
	now := map[string]any{"send": true}
	for k, v := range draft {
		now[k] = v
	}
	c := wantStatus(t, a.Do("POST", "/v1/broadcasts", now), http.StatusCreated)
	if c["status"] == "draft" {
		t.Fatalf("create{send} left a draft: %v", c)
	}
	delete(sched, "send")
	if r := a.Do("POST", "/v1/broadcasts", sched); r.Status != http.StatusBadRequest {
		t.Fatalf("scheduled_at without send: %d %s", r.Status, r.Body)
	}
}

// TestSuppressionsByAddress: GET and DELETE /v1/suppressions/{id} take an
// address too (an @ that is no address is 422), and the SDKs' batches.
func TestSuppressionsByAddress(t *testing.T) {
	a := testapp.Start(t)
	s := wantStatus(t, a.Do("POST", "/v1/suppressions", map[string]any{"email": "Sup@Example.com"}), http.StatusCreated)
	if s["object"] != "suppression" {
		t.Fatalf("object: %v", s)
	}
	for _, p := range []string{s["id"].(string), "sup@example.com", "SUP@example.com"} {
		if g := wantStatus(t, a.Do("GET", "/v1/suppressions/"+p, nil), http.StatusOK); g["id"] != s["id"] {
			t.Fatalf("get %s: %v", p, g)
		}
	}
	if r := a.Do("GET", "/v1/suppressions/not@an@address", nil); r.Status != http.StatusUnprocessableEntity || r.ErrCode() != "invalid_email" || !r.ErrFlat() {
		t.Fatalf("not an address: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/v1/suppressions/nobody@example.com", nil); r.Status != http.StatusNotFound {
		t.Fatalf("no row: %d %s", r.Status, r.Body)
	}
	if d := wantStatus(t, a.Do("DELETE", "/v1/suppressions/sup@example.com", nil), http.StatusOK); d["deleted"] != s["id"] {
		t.Fatalf("delete by address: %v", d)
	}
	if r := a.Do("GET", "/v1/suppressions/"+s["id"].(string), nil); r.Status != http.StatusNotFound {
		t.Fatalf("after delete: %d %s", r.Status, r.Body)
	}

	b := wantStatus(t, a.Do("POST", "/v1/suppressions/batch/add", map[string]any{"emails": []string{"b1@example.com", "b2@example.com"}}), http.StatusOK)
	if d, _ := b["data"].([]any); len(d) != 2 {
		t.Fatalf("batch add: %v", b)
	}
	if r := a.Do("POST", "/v1/suppressions/batch/add", map[string]any{"emails": []string{"ok@example.com", "nope"}}); r.Status != http.StatusBadRequest {
		t.Fatalf("batch with a bad address: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/v1/suppressions/ok@example.com", nil); r.Status != http.StatusNotFound {
		t.Fatalf("a refused batch wrote: %d %s", r.Status, r.Body)
	}
	rm := wantStatus(t, a.Do("POST", "/v1/suppressions/batch/remove", map[string]any{"emails": []string{"b1@example.com", "never@example.com"}}), http.StatusOK)
	if d, _ := rm["deleted"].([]any); len(d) != 1 {
		t.Fatalf("batch remove: %v", rm)
	}
	if r := a.Do("POST", "/v1/suppressions/batch/add", map[string]any{"emails": []string{"x@example.com"}, "extra": 1}); r.Status != http.StatusBadRequest {
		t.Fatalf("unknown field: %d %s", r.Status, r.Body)
	}
}

// TestTopicAndKeySDKSpellings: default_subscription beside default_opt_in,
// the path's id repeated on PATCH, and domainId beside domain_id.
func TestTopicAndKeySDKSpellings(t *testing.T) {
	a := testapp.Start(t)
	tp := wantStatus(t, a.Do("POST", "/v1/topics", map[string]any{"name": "News", "default_subscription": "opt_out"}), http.StatusCreated)
	if tp["default_opt_in"] != false || tp["default_subscription"] != "opt_out" {
		t.Fatalf("create: %v", tp)
	}
	id := tp["id"].(string)
	if p := wantStatus(t, a.Do("PATCH", "/v1/topics/"+id, map[string]any{"id": id, "default_subscription": "opt_in"}), http.StatusOK); p["default_opt_in"] != true {
		t.Fatalf("patch: %v", p)
	}
	for _, body := range []map[string]any{
		{"name": "X", "default_subscription": "sometimes"},
		{"name": "Y", "default_subscription": "opt_in", "default_opt_in": false},
	} {
		if r := a.Do("POST", "/v1/topics", body); r.Status != http.StatusBadRequest || !r.ErrFlat() {
			t.Fatalf("%v: %d %s", body, r.Status, r.Body)
		}
	}
	if r := a.Do("PATCH", "/v1/topics/"+id, map[string]any{"id": "top_other"}); r.Status != http.StatusBadRequest {
		t.Fatalf("another id: %d %s", r.Status, r.Body)
	}

	d := wantStatus(t, a.Do("POST", "/v1/domains", map[string]any{"name": "keys.example"}), http.StatusCreated)
	k := wantStatus(t, a.Do("POST", "/v1/api-keys", map[string]any{"name": "d", "permission": "sending_access", "domainId": d["id"]}), http.StatusCreated)
	if k["domain_id"] != d["id"] {
		t.Fatalf("domainId: %v", k)
	}
	if r := a.Do("POST", "/v1/api-keys", map[string]any{"name": "e", "domainId": d["id"], "domain_id": "dom_other"}); r.Status != http.StatusBadRequest {
		t.Fatalf("both, differing: %d %s", r.Status, r.Body)
	}
}

// TestWebhookSDKSpellings: status and endpoint beside active and url, and
// the SDKs' rotation route, which keeps the old secret through its window.
func TestWebhookSDKSpellings(t *testing.T) {
	a := testapp.Start(t)
	wh := wantStatus(t, a.Do("POST", "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/a", "events": []string{"email.delivered"}}), http.StatusCreated)
	id := wh["id"].(string)
	p := wantStatus(t, a.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"status": "disabled", "endpoint": "https://hooks.example.com/b"}), http.StatusOK)
	if p["active"] != false || p["url"] != "https://hooks.example.com/b" || p["object"] != "webhook" {
		t.Fatalf("status/endpoint: %v", p)
	}
	if p := wantStatus(t, a.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"status": "enabled"}), http.StatusOK); p["active"] != true {
		t.Fatalf("enabled: %v", p)
	}
	for _, body := range []map[string]any{{"status": "paused"}, {"status": "enabled", "active": false}, {"url": "https://x.example.com", "endpoint": "https://y.example.com"}} {
		if r := a.Do("PATCH", "/v1/webhooks/"+id, body); r.Status != http.StatusBadRequest || r.ErrFlat() {
			t.Fatalf("%v: %d %s", body, r.Status, r.Body)
		}
	}
	// The delivery log by event (TestNodeSDK reads one with a real delivery).
	if ev := wantStatus(t, a.Do("GET", "/v1/webhooks/"+id+"/events", nil), http.StatusOK); ev["object"] != "list" || len(ev["data"].([]any)) != 0 {
		t.Fatalf("events of a new endpoint: %v", ev)
	}
	for _, p := range []string{"GET /v1/webhooks/" + id + "/events/evt_none/attempts", "POST /v1/webhooks/" + id + "/events/evt_none/replay", "GET /v1/webhooks/wh_none/events"} {
		m, path, _ := strings.Cut(p, " ")
		if r := a.Do(m, path, nil); r.Status != http.StatusNotFound || r.ErrFlat() {
			t.Fatalf("%s: %d %s", p, r.Status, r.Body)
		}
	}
	rot := wantStatus(t, a.Do("POST", "/v1/webhooks/"+id+"/signing-secret/rotate", nil), http.StatusOK)
	if rot["signing_secret"] == wh["signing_secret"] || rot["signing_secret"] == "" || rot["previous_secret_valid_until"] == nil {
		t.Fatalf("rotate: %v (was %v)", rot, wh["signing_secret"])
	}
}

// TestTemplateSDKShapes: Resend's variables { key, type, fallback_value }
// beside the spec's; PATCH still refuses content, as the spec says.
func TestTemplateSDKShapes(t *testing.T) {
	a := testapp.Start(t)
	tp := wantStatus(t, a.Do("POST", "/v1/templates", map[string]any{"name": "Welcome", "subject": "Hi {{{NAME}}}", "html": "<p>Hi {{{NAME}}} {{{N}}}</p>",
		"publish": true, "variables": []any{map[string]any{"key": "NAME", "type": "string", "fallback_value": "there"},
			map[string]any{"key": "N", "type": "number", "fallback_value": 3}, map[string]any{"key": "REQ", "type": "string"}}}), http.StatusCreated)
	id := tp["id"].(string)
	vs := wantStatus(t, a.Do("GET", "/v1/templates/"+id+"/versions", nil), http.StatusOK)["versions"].([]any)
	vars := vs[0].(map[string]any)["variables"].([]any)
	if len(vars) != 3 || vars[0].(map[string]any)["default"] != "there" || vars[1].(map[string]any)["default"] != "3" || vars[2].(map[string]any)["required"] != true {
		t.Fatalf("variables: %v", vars)
	}
	for _, v := range []any{map[string]any{"key": "X", "type": "date"}, map[string]any{"key": "X", "type": "number", "fallback_value": "3"},
		map[string]any{"key": "X", "type": "string", "extra": 1}} {
		if r := a.Do("POST", "/v1/templates", map[string]any{"name": "Bad", "html": "x", "variables": []any{v}}); r.Status != http.StatusBadRequest || !r.ErrFlat() {
			t.Fatalf("%v: %d %s", v, r.Status, r.Body)
		}
	}
	// The spec keeps content out of PATCH, the Resend SDKs' update too.
	if r := a.Do("PATCH", "/v1/templates/"+id, map[string]any{"subject": "Hello"}); r.Status != http.StatusBadRequest || !r.ErrFlat() {
		t.Fatalf("patch with content: %d %s", r.Status, r.Body)
	}
}

// TestContactsByEmail: a contact route takes the contact's address where
// its id goes; an @ that is no address is 422, an unknown address 404.
func TestContactsByEmail(t *testing.T) {
	a := testapp.Start(t)
	c := wantStatus(t, a.Do("POST", "/v1/contacts", map[string]any{"email": "Ann@Example.com", "first_name": "Ann"}), http.StatusCreated)
	id := c["id"].(string)
	if g := wantStatus(t, a.Do("GET", "/v1/contacts/ann@example.com", nil), http.StatusOK); g["id"] != id {
		t.Fatalf("get by address: %v", g)
	}
	aud := wantStatus(t, a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}), http.StatusCreated)["id"].(string)
	wantStatus(t, a.Do("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "ann@example.com"}}), http.StatusCreated)
	p := wantStatus(t, a.Do("PATCH", "/v1/contacts/ANN@example.com", map[string]any{"id": id, "last_name": "Lee", "unsubscribed": true}), http.StatusOK)
	if p["id"] != id || p["last_name"] != "Lee" {
		t.Fatalf("patch by address: %v", p)
	}
	subs := wantStatus(t, a.Do("GET", "/v1/contacts/ann@example.com/subscriptions", nil), http.StatusOK)
	ss, _ := subs["subscriptions"].([]any)
	if len(ss) != 1 || len(ss[0].(map[string]any)["audiences"].([]any)) != 1 ||
		ss[0].(map[string]any)["audiences"].([]any)[0].(map[string]any)["status"] != "unsubscribed" {
		t.Fatalf("unsubscribed: true left %v", subs)
	}
	if tags := wantStatus(t, a.Do("POST", "/v1/contacts/ann@example.com/tags", map[string]any{"tags": []string{"vip"}}), http.StatusOK); tags["tags"] == nil {
		t.Fatalf("tags by address: %v", tags)
	}
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		flat         bool
	}{
		{"GET", "/v1/contacts/not@an@address", nil, http.StatusUnprocessableEntity, true},
		{"GET", "/v1/contacts/not@an@address/tags", nil, http.StatusUnprocessableEntity, false},
		{"GET", "/v1/contacts/nobody@example.com", nil, http.StatusNotFound, true},
		{"PATCH", "/v1/contacts/ann@example.com", map[string]any{"id": "ct_other"}, http.StatusBadRequest, true},
		{"PATCH", "/v1/contacts/ann@example.com", map[string]any{"unsubscribed": false}, http.StatusBadRequest, true},
		{"PATCH", "/v1/contacts/ann@example.com", map[string]any{"properties": map[string]any{}}, http.StatusBadRequest, true},
	} {
		r := a.Do(tc.method, tc.path, tc.body)
		if r.Status != tc.status || r.ErrFlat() != tc.flat {
			t.Errorf("%s %s %v: %d %s", tc.method, tc.path, tc.body, r.Status, r.Body)
		}
	}
	if r := a.Do("GET", "/v1/contacts/not@an@address", nil); r.ErrCode() != "invalid_email" {
		t.Errorf("code: %s", r.Body)
	}
	if d := wantStatus(t, a.Do("DELETE", "/v1/contacts/ann@example.com", nil), http.StatusOK); d["id"] != id {
		t.Fatalf("delete by address: %v", d)
	}
	if r := a.Do("GET", "/v1/contacts/"+id, nil); r.Status != http.StatusNotFound {
		t.Fatalf("after delete: %d", r.Status)
	}
}

// TestContactTopics: a contact's topic preferences in the SDKs' shape; a
// PATCH is checked whole before anything is written.
func TestContactTopics(t *testing.T) {
	a := testapp.Start(t)
	wantStatus(t, a.Do("POST", "/v1/contacts", map[string]any{"email": "ann@example.com"}), http.StatusCreated)
	tp := wantStatus(t, a.Do("POST", "/v1/topics", map[string]any{"name": "News"}), http.StatusCreated)["id"].(string)
	for _, body := range []any{map[string]any{"id": tp}, []any{}, []any{map[string]any{"id": tp, "subscription": "maybe"}},
		[]any{map[string]any{"id": tp, "subscription": "opt_out", "extra": 1}}} {
		if r := a.Do("PATCH", "/v1/contacts/ann@example.com/topics", body); r.Status != http.StatusBadRequest || r.ErrFlat() {
			t.Fatalf("%v: %d %s", body, r.Status, r.Body)
		}
	}
	both := []any{map[string]any{"id": tp, "subscription": "opt_out"}, map[string]any{"id": "top_none", "subscription": "opt_in"}}
	if r := a.Do("PATCH", "/v1/contacts/ann@example.com/topics", both); r.Status != http.StatusNotFound {
		t.Fatalf("unknown topic: %d %s", r.Status, r.Body)
	}
	list := wantStatus(t, a.Do("GET", "/v1/contacts/ann@example.com/topics", nil), http.StatusOK)
	if d := list["data"].([]any); len(d) != 1 || d[0].(map[string]any)["subscription"] != "opt_in" {
		t.Fatalf("a refused PATCH wrote: %v", list)
	}
	wantStatus(t, a.Do("PATCH", "/v1/contacts/ann@example.com/topics", both[:1]), http.StatusOK)
	if p := wantStatus(t, a.Do("GET", "/v1/topics/preferences?email=ann@example.com", nil), http.StatusOK); p["preferences"].([]any)[0].(map[string]any)["subscribed"] != false {
		t.Fatalf("preferences after PATCH: %v", p)
	}
}

// TestAutomationStatus: Resend's status beside enabled on PATCH.
func TestAutomationStatus(t *testing.T) {
	a := testapp.Start(t)
	id := wantStatus(t, a.Do("POST", "/v1/automations", map[string]any{"yaml": "name: Flow\ntrigger: { event: api.call }\nsteps:\n  - wait: 1h\n"}), http.StatusCreated)["id"].(string)
	if p := wantStatus(t, a.Do("PATCH", "/v1/automations/"+id, map[string]any{"status": "disabled"}), http.StatusOK); p["enabled"] != false {
		t.Fatalf("disabled: %v", p)
	}
	if p := wantStatus(t, a.Do("PATCH", "/v1/automations/"+id, map[string]any{"status": "enabled", "enabled": true}), http.StatusOK); p["enabled"] != true {
		t.Fatalf("enabled: %v", p)
	}
	for _, body := range []map[string]any{{"status": "paused"}, {"status": "enabled", "enabled": false}} {
		if r := a.Do("PATCH", "/v1/automations/"+id, body); r.Status != http.StatusBadRequest || r.ErrFlat() {
			t.Fatalf("%v: %d %s", body, r.Status, r.Body)
		}
	}
}
