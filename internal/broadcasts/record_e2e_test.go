package broadcasts_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestFooterSwitchAndProblems (issues #40 item 1, #44 item 2): with
// unsubscribe_footer off, a body without its own link is not ready
// (problems[] says no_unsubscribe_link) and cannot be sent; once the body
// has {{ unsubscribe_url }} it is ready, problems[] is there and empty on
// every read, and the mail carries the body's link and no footer. After
// the send, recipients counts the snapshot.
func TestFooterSwitchAndProblems(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 2)
	created := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"audience_id": aud, "from": sandbox,
		"subject": "Own footer", "html": "<p>No link yet</p>", "unsubscribe_footer": false}), 201)
	id := created["id"].(string)
	if created["ready"] != false || !strings.Contains(toJSON(created["problems"]), `"no_unsubscribe_link"`) {
		t.Fatalf("created: %v", created)
	}
	if r := a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/send", nil); r.Status < 400 {
		t.Fatalf("a broadcast without a visible opt-out was sent: %d %s", r.Status, r.Body)
	}
	got := mustStatus(t, a.Do(http.MethodPatch, "/v1/broadcasts/"+id, map[string]any{
		"html": `<p>News</p><p><a href="{{ unsubscribe_url }}">Leave</a></p>`, "text": "News. Leave: *|UNSUB|*"}), 200)
	if got["ready"] != true || toJSON(got["problems"]) != "[]" || got["unsubscribe_footer"] != false || got["recipients"] != float64(0) {
		t.Fatalf("after the link was added: %v", got)
	}
	list := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts", nil), 200)["broadcasts"].([]any)
	if e := list[0].(map[string]any); e["id"] != id || e["ready"] != true || toJSON(e["problems"]) != "[]" {
		t.Fatalf("list entry: %v", e)
	}
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/send", nil), 200)
	for _, m := range sink.WaitFor(2, 15*time.Second) {
		h, html, text := smtpsink.Parts(t, m.Data)
		link := strings.TrimPrefix(strings.SplitN(h.Get("List-Unsubscribe"), ">", 2)[0], "<")
		if strings.Contains(html, "mailroom-unsubscribe-footer") || !strings.Contains(html, link) || strings.Count(text, link) != 1 {
			t.Fatalf("%s: want the body's own link and no footer:\n%s\n%s", m.To[0], html, text)
		}
	}
	testapp.Eventually(t, 15*time.Second, func() bool {
		g := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+id, nil), 200)
		return g["status"] == "sent" && g["recipients"] == float64(2) && toJSON(g["problems"]) == "[]"
	}, "the sent broadcast's record")
}

// TestTemplateVersionHonoured (#44 item 2): template_version_id on create
// and PATCH picks the version the preview, the test send and the send
// render, not the published one; an unknown version is a problem.
func TestTemplateVersionHonoured(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 1)
	tpl := mustStatus(t, a.Do(http.MethodPost, "/v1/templates", map[string]any{"name": "News", "subject": "News v1", "html": "<p>v1 body</p>", "publish": true}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/templates/"+tpl+"/versions", map[string]any{"subject": "News v2", "html": "<p>v2 body</p>"}), 201)
	var v1 string
	for _, v := range mustStatus(t, a.Do(http.MethodGet, "/v1/templates/"+tpl, nil), 200)["versions"].([]any) {
		if v := v.(map[string]any); v["subject"] == "News v1" {
			v1 = v["id"].(string)
		}
	}
	mustStatus(t, a.Do(http.MethodPost, "/v1/templates/"+tpl+"/publish", map[string]any{"version": 2}), 200)

	bad := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "template_id": tpl, "template_version_id": "tv_nope"}), 201)
	if !strings.Contains(toJSON(bad["problems"]), `"unknown_template_version"`) {
		t.Fatalf("unknown version: %v", bad)
	}
	id := bad["id"].(string)
	got := mustStatus(t, a.Do(http.MethodPatch, "/v1/broadcasts/"+id, map[string]any{"template_version_id": v1}), 200)
	if got["ready"] != true || got["template_version_id"] != v1 {
		t.Fatalf("after PATCH: %v", got)
	}
	pv := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+id+"/preview", nil), 200)
	if !strings.Contains(toJSON(pv), "v1 body") {
		t.Fatalf("preview rendered another version: %v", pv)
	}
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/test", map[string]any{"to": "delivered@" + a.Env["MAILROOM_SERVICE_DOMAIN"]}), 200)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+id+"/send", nil), 200)
	testapp.Eventually(t, 15*time.Second, func() bool { return sink.Count() >= 1 }, "nothing delivered")
	for _, m := range sink.Messages() {
		if s := string(m.Data); !strings.Contains(s, "News v1") || strings.Contains(s, "v2 body") {
			t.Fatalf("the send rendered another version:\n%s", s)
		}
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
