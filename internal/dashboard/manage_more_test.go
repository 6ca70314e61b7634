package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// confirmThenPost checks that a destructive action's GET only asks (the
// resource at api is still there), then posts it and wants a redirect.
func confirmThenPost(t *testing.T, a *testapp.App, v *visitor, action, button, api string) {
	t.Helper()
	want(t, v.get(action), http.StatusOK, button)
	if api != "" {
		if r := a.Do("GET", api, nil); r.Status != 200 {
			t.Fatalf("%s: the confirmation page changed it: %d", action, r.Status)
		}
	}
	if p := v.post(action, nil); p.status != http.StatusSeeOther {
		t.Fatalf("%s: %d %s", action, p.status, p.body)
	}
}

// TestManageKeysTopicsSegmentsMailboxes (#43 item 2): a key is created
// (its value shown once) and revoked after a confirmation; a topic
// created, edited, archived and restored; a segment created and deleted; a
// mailbox created and deleted; each as the API's own call, seen through it.
func TestManageKeysTopicsSegmentsMailboxes(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	v := newVisitor(t, a)
	v.signIn(a.Key)

	// API keys: the value once, then revoke after asking.
	v.get("/api-keys")
	p := v.post("/api-keys", url.Values{"name": {"ci"}, "scope": {"mail:send"}})
	want(t, p, http.StatusCreated, "only time the key is shown", "mr_")
	var id string
	for _, k := range a.Do("GET", "/v1/api-keys", nil).JSON()["data"].([]any) {
		if m := k.(map[string]any); m["name"] == "ci" {
			id = m["id"].(string)
		}
	}
	list := v.get("/api-keys")
	want(t, list, http.StatusOK, `href="/api-keys/`+id+`/revoke"`)
	if strings.Contains(list.body, "mr_") {
		t.Fatal("the key list shows a key's value")
	}
	want(t, v.get("/api-keys/"+id+"/revoke"), http.StatusOK, "Revoke the key ci?", "Revoke key")
	if p := v.post("/api-keys/"+id+"/revoke", nil); p.status != http.StatusSeeOther {
		t.Fatalf("revoke %d", p.status)
	}
	if strings.Contains(string(a.Do("GET", "/v1/api-keys", nil).Body), id) {
		t.Fatal("the key outlived its revocation")
	}

	// Topics.
	v.get("/topics")
	p = v.post("/topics", url.Values{"name": {"Product news"}, "description": {"Monthly"}, "default_opt_in": {"on"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("create topic %d %s", p.status, p.body)
	}
	topic := strings.TrimPrefix(strings.Split(p.header.Get("Location"), "?")[0], "/topics/")
	if r := a.Do("GET", "/v1/topics/"+topic, nil).JSON(); r["name"] != "Product news" || r["default_subscription"] != "opt_in" {
		t.Fatalf("created topic: %v", r)
	}
	want(t, v.get("/topics"), http.StatusOK, "Product news", "/topics/"+topic)
	want(t, v.post("/topics/"+topic, url.Values{"name": {"Product updates"}, "description": {"Now weekly"}, "required": {"on"}}), http.StatusSeeOther)
	if r := a.Do("GET", "/v1/topics/"+topic, nil).JSON(); r["name"] != "Product updates" || r["default_subscription"] != "opt_out" || r["required"] != true {
		t.Fatalf("edited topic: %v", r)
	}
	confirmThenPost(t, a, v, "/topics/"+topic+"/archive", "Archive topic", "")
	if r := a.Do("GET", "/v1/topics/"+topic, nil).JSON(); r["archived_at"] == nil {
		t.Fatalf("the topic is not archived: %v", r)
	}
	want(t, v.get("/topics/"+topic), http.StatusOK, "archived", "Restore")
	want(t, v.post("/topics/"+topic+"/restore", nil), http.StatusSeeOther)
	if r := a.Do("GET", "/v1/topics/"+topic, nil).JSON(); r["archived_at"] != nil {
		t.Fatalf("the topic is still archived: %v", r)
	}

	// Segments: bad JSON is refused in words; a good one is made and deleted.
	v.get("/segments")
	want(t, v.post("/segments", url.Values{"name": {"VIP"}, "rules": {"[{"}}), http.StatusBadRequest, "not valid JSON")
	want(t, v.post("/segments", url.Values{"name": {"VIP"}, "match": {"all"}, "rules": {`[{"field": "tag", "op": "has", "value": "vip"}]`}}), http.StatusSeeOther)
	segs := a.Do("GET", "/v1/segments", nil).JSON()["segments"].([]any)
	if len(segs) != 1 {
		t.Fatalf("segments: %v", segs)
	}
	seg := segs[0].(map[string]any)["id"].(string)
	want(t, v.get("/segments"), http.StatusOK, "VIP", "/segments/"+seg+"/delete")
	confirmThenPost(t, a, v, "/segments/"+seg+"/delete", "Delete segment", "/v1/segments/"+seg)
	if r := a.Do("GET", "/v1/segments/"+seg, nil); r.Status != 404 {
		t.Fatalf("the segment outlived its deletion: %d", r.Status)
	}

	// Mailboxes.
	v.get("/mailboxes")
	want(t, v.post("/mailboxes", url.Values{"address": {"help"}, "name": {"Help desk"}}), http.StatusSeeOther)
	var mbx string
	for _, m := range a.Do("GET", "/v1/mailboxes", nil).JSON()["mailboxes"].([]any) {
		if m := m.(map[string]any); strings.HasPrefix(m["address"].(string), "help@") {
			mbx = m["id"].(string)
		}
	}
	if mbx == "" {
		t.Fatal("the mailbox was not created")
	}
	want(t, v.get("/mailboxes"), http.StatusOK, "Help desk", "/mailboxes/"+mbx+"/delete")
	confirmThenPost(t, a, v, "/mailboxes/"+mbx+"/delete", "Delete mailbox", "/v1/mailboxes/"+mbx)
	if r := a.Do("GET", "/v1/mailboxes/"+mbx, nil); r.Status != 404 {
		t.Fatalf("the mailbox outlived its deletion: %d", r.Status)
	}
}

// TestManageMembersBroadcastsSuppressions (#43 item 2): an audience member
// is added and removed, a scheduled broadcast cancelled after asking and
// duplicated as a draft, and a suppression added and removed.
func TestManageMembersBroadcastsSuppressions(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}).JSON()["id"].(string)
	bc := a.Do("POST", "/v1/broadcasts", map[string]any{"name": "Launch", "from": "onboarding@mailroom.test", "audience_id": aud, "subject": "Hi", "html": "<p>Hello</p>"}).JSON()["id"].(string)
	v := newVisitor(t, a)
	v.signIn(a.Key)

	v.get("/audiences/" + aud)
	want(t, v.post("/audiences/"+aud+"/members", url.Values{"email": {"not an address"}}), http.StatusBadRequest)
	want(t, v.post("/audiences/"+aud+"/members", url.Values{"email": {"ann@example.net"}, "first_name": {"Ann"}}), http.StatusSeeOther)
	ms := a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil).JSON()["contacts"].([]any)
	if len(ms) != 1 || ms[0].(map[string]any)["email"] != "ann@example.net" {
		t.Fatalf("members: %v", ms)
	}
	member := ms[0].(map[string]any)["id"].(string)
	want(t, v.get("/audiences/"+aud), http.StatusOK, "ann@example.net", "/members/"+member+"/remove")
	confirmThenPost(t, a, v, "/audiences/"+aud+"/members/"+member+"/remove", "Remove member", "/v1/audiences/"+aud+"/contacts/"+member)
	if r := a.Do("GET", "/v1/audiences/"+aud+"/contacts/"+member, nil); r.Status != 404 {
		t.Fatalf("the member outlived its removal: %d", r.Status)
	}

	// Broadcasts: cancel a scheduled one after asking, then duplicate it.
	a.Do("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "bob@example.net"}})
	at := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Minute)
	if r := a.Do("POST", "/v1/broadcasts/"+bc+"/send", map[string]any{"scheduled_at": at.Format(time.RFC3339)}); r.Status >= 300 {
		t.Fatalf("schedule: %d %s", r.Status, r.Body)
	}
	want(t, v.get("/broadcasts/"+bc), http.StatusOK, `href="/broadcasts/`+bc+`/cancel"`, "Duplicate")
	confirmThenPost(t, a, v, "/broadcasts/"+bc+"/cancel", "Cancel broadcast", "")
	if r := a.Do("GET", "/v1/broadcasts/"+bc, nil).JSON(); r["status"] != "cancelled" {
		t.Fatalf("after cancelling: %v", r["status"])
	}
	p := v.post("/broadcasts/"+bc+"/duplicate", nil)
	if p.status != http.StatusSeeOther {
		t.Fatalf("duplicate %d %s", p.status, p.body)
	}
	dup := strings.TrimPrefix(strings.Split(p.header.Get("Location"), "?")[0], "/broadcasts/")
	if r := a.Do("GET", "/v1/broadcasts/"+dup, nil).JSON(); dup == bc || r["status"] != "draft" || r["name"] != "Launch (copy)" || r["subject"] != "Hi" || r["audience_id"] != aud {
		t.Fatalf("the copy: %v", r)
	}

	// Suppressions.
	v.get("/suppressions")
	want(t, v.post("/suppressions", url.Values{"email": {"gone@example.net"}}), http.StatusSeeOther)
	sp := a.Do("GET", "/v1/suppressions?email=gone@example.net", nil).JSON()["data"].([]any)[0].(map[string]any)["id"].(string)
	want(t, v.get("/suppressions"), http.StatusOK, "/suppressions/"+sp+"/remove")
	confirmThenPost(t, a, v, "/suppressions/"+sp+"/remove", "Remove suppression", "/v1/suppressions/"+sp)
	if r := a.Do("GET", "/v1/suppressions/"+sp, nil); r.Status != 404 {
		t.Fatalf("the suppression outlived its removal: %d", r.Status)
	}
}

// TestNarrowKeyManagesNoMoreThanTheAPI (#43 item 2): a send-only key and a
// key bound to a mailbox are refused by the dashboard exactly where the
// API refuses them, and nothing changes.
func TestNarrowKeyManagesNoMoreThanTheAPI(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	owner := a.Do("GET", "/v1/api-keys", nil).JSON()["data"].([]any)[0].(map[string]any)["id"].(string)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}).JSON()["id"].(string)
	topic := a.Do("POST", "/v1/topics", map[string]any{"name": "Kept"}).JSON()["id"].(string)
	mine := a.Do("POST", "/v1/mailboxes", map[string]any{"local_part": "desk"}).JSON()["id"].(string)
	other := a.Do("POST", "/v1/mailboxes", map[string]any{"local_part": "sales"}).JSON()["id"].(string)
	sendOnly := a.Do("POST", "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}}).JSON()["key"].(string)
	bound := a.Do("POST", "/v1/api-keys", map[string]any{"name": "desk", "mailbox_id": mine}).JSON()["key"].(string)

	cases := []struct {
		key      string
		api      [2]string // method, path
		page     string
		form     url.Values
		status   int
		unchange string // a /v1 path that must still answer 200
		body     any    // the API request's body
	}{
		{sendOnly, [2]string{"DELETE", "/v1/topics/" + topic}, "/topics/" + topic + "/archive", nil, 403, "/v1/topics/" + topic, nil},
		{sendOnly, [2]string{"POST", "/v1/topics"}, "/topics", url.Values{"name": {"More"}}, 403, "", map[string]any{"name": "More"}},
		{sendOnly, [2]string{"POST", "/v1/segments"}, "/segments", url.Values{"name": {"S"}}, 403, "", map[string]any{"name": "S"}},
		{sendOnly, [2]string{"POST", "/v1/audiences/" + aud + "/contacts"}, "/audiences/" + aud + "/members", url.Values{"email": {"x@example.net"}}, 403, "", []any{map[string]any{"email": "x@example.net"}}},
		{sendOnly, [2]string{"DELETE", "/v1/api-keys/" + owner}, "/api-keys/" + owner + "/revoke", nil, 403, "", nil},
		{sendOnly, [2]string{"DELETE", "/v1/mailboxes/" + other}, "/mailboxes/" + other + "/delete", nil, 403, "/v1/mailboxes/" + other, nil},
		{sendOnly, [2]string{"POST", "/v1/suppressions"}, "/suppressions", url.Values{"email": {"x@example.net"}}, 403, "", map[string]any{"email": "x@example.net"}},
		{bound, [2]string{"POST", "/v1/mailboxes"}, "/mailboxes", url.Values{"address": {"more"}}, 403, "", map[string]any{"local_part": "more"}},
		{bound, [2]string{"DELETE", "/v1/mailboxes/" + other}, "/mailboxes/" + other + "/delete", nil, 404, "/v1/mailboxes/" + other, nil},
		{bound, [2]string{"DELETE", "/v1/api-keys/" + owner}, "/api-keys/" + owner + "/revoke", nil, 404, "", nil},
		{bound, [2]string{"POST", "/v1/topics"}, "/topics", url.Values{"name": {"More"}}, 403, "", map[string]any{"name": "More"}},
		{bound, [2]string{"DELETE", "/v1/topics/" + topic}, "/topics/" + topic + "/archive", nil, 403, "/v1/topics/" + topic, nil},
	}
	visitors := map[string]*visitor{}
	for _, k := range []string{sendOnly, bound} {
		v := newVisitor(t, a)
		want(t, v.get("/sign-in"), http.StatusOK)
		if p := v.post("/sign-in", url.Values{"key": {k}}); p.status != http.StatusSeeOther {
			t.Fatalf("sign-in %d", p.status)
		}
		v.get("/")
		visitors[k] = v
	}
	before := len(a.Do("GET", "/v1/api-keys", nil).JSON()["data"].([]any))
	for _, c := range cases {
		// The dashboard first, so the API's answer is not for a changed state.
		if p := visitors[c.key].post(c.page, c.form); p.status != c.status {
			t.Errorf("POST %s: %d, want %d as the API", c.page, p.status, c.status)
		}
		if c.page != "/topics" && c.page != "/segments" && c.page != "/suppressions" && c.page != "/mailboxes" && !strings.HasSuffix(c.page, "/members") {
			if p := visitors[c.key].get(c.page); p.status != c.status {
				t.Errorf("GET %s (the confirmation): %d, want %d", c.page, p.status, c.status)
			}
		}
		if c.unchange != "" {
			if r := a.Do("GET", c.unchange, nil); r.Status != 200 || strings.Contains(string(r.Body), `"archived_at":"`) {
				t.Errorf("%s changed: %d %s", c.unchange, r.Status, r.Body)
			}
		}
		if r := a.DoKey(c.key, c.api[0], c.api[1], c.body); r.Status != c.status {
			t.Errorf("the API answered %s %s with %d, the dashboard %d", c.api[0], c.api[1], r.Status, c.status)
		}
	}
	if n := len(a.Do("GET", "/v1/api-keys", nil).JSON()["data"].([]any)); n != before {
		t.Fatalf("keys: %d, were %d", n, before)
	}
	if n := len(a.Do("GET", "/v1/topics", nil).JSON()["data"].([]any)); n != 1 {
		t.Fatalf("topics: %d", n)
	}
}
