package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestLaterAreas: the inbox, audiences, templates, broadcasts and
// automations pages show what the API made, escaped, with bodies only in
// their sandboxed frames; a reply joins its thread; a refused automation
// edit shows its problems at their lines; another workspace's ids answer 404.
func TestLaterAreas(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	const evil = `<img src=x onerror=alert(1)>`
	must := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		r := a.Do(method, path, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r.JSON()
	}
	aud := must("POST", "/v1/audiences", map[string]any{"name": "News " + evil}, 201)["id"].(string)
	must("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "ann@example.net"}}, 201)
	tpl := must("POST", "/v1/templates", map[string]any{"name": "Welcome " + evil, "subject": "Hi {{name}}", "html": "<p>Hello {{name}}</p><script>alert(2)</script>", "publish": true}, 201)["id"].(string)
	bc := must("POST", "/v1/broadcasts", map[string]any{"name": "Launch " + evil, "from": "onboarding@mailroom.test", "audience_id": aud, "subject": "S", "html": "<p>Launch</p>"}, 201)["id"].(string)
	req, _ := http.NewRequest("POST", a.URL+"/v1/automations", strings.NewReader("name: Drip "+evil+"\ntrigger: { event: api.call }\nsteps:\n  - wait: 1h\n"))
	req.Header.Set("Content-Type", "text/yaml")
	req.Header.Set("Authorization", "Bearer "+a.Key)
	ar := a.Send(req)
	if ar.Status != 201 {
		t.Fatalf("automation: %d %s", ar.Status, ar.Body)
	}
	auto := ar.JSON()["id"].(string)
	msg := must("POST", "/v1/messages", map[string]any{"to": []any{"delivered@mailroom.test"}, "subject": "Thread " + evil, "body": "hello"}, 200)
	thread, ok := msg["thread_id"].(string)
	if !ok || thread == "" {
		t.Fatalf("the sent message has no thread: %v", msg)
	}

	v := newVisitor(t, a)
	v.signIn(a.Key)
	for path, wantText := range map[string]string{
		"/audiences": "News &lt;img", "/audiences/" + aud: "ann@example.net",
		"/templates": "Welcome &lt;img", "/templates/" + tpl: "Preview",
		"/broadcasts": "Launch &lt;img", "/broadcasts/" + bc: "Send now",
		"/automations": "Drip &lt;img", "/automations/" + auto: "api.call",
		"/inbox": "Thread &lt;img",
	} {
		p := v.get(path)
		want(t, p, http.StatusOK, wantText)
		if strings.Contains(p.body, evil) || strings.Contains(p.body, "<script>alert(2)") {
			t.Fatalf("%s shows hostile text unescaped", path)
		}
	}
	want(t, v.get("/inbox/"+thread), http.StatusOK, "Thread &lt;img", "sandbox")
	// A reply from the thread page goes into the thread.
	msgID := msg["id"].(string)
	v.get("/inbox/" + thread)
	if p := v.post("/inbox/"+thread+"/"+msgID+"/reply", url.Values{"body": {"Thanks, noted."}}); p.status != http.StatusSeeOther {
		t.Fatalf("reply: %d %s", p.status, p.body)
	}
	if n := len(must("GET", "/v1/threads/"+thread, nil, 200)["messages"].([]any)); n != 2 {
		t.Fatalf("the thread has %d messages after the reply", n)
	}
	// The thread reads like mail: one reply box, no authentication line
	// under our own sent messages.
	if p := v.get("/inbox/" + thread); strings.Count(p.body, "Send reply") != 1 || strings.Contains(p.body, "DKIM") {
		t.Fatalf("the thread page has %d reply boxes, or authentication under sent mail:\n%s", strings.Count(p.body, "Send reply"), p.body)
	}
	// An automation's YAML: a refused edit shows its problems at their
	// lines and saves nothing; a good one is a new version.
	v.get("/automations/" + auto)
	bad := "name: Drip\ntrigger: { event: api.call }\nsteps:\n  - wait: forever\n"
	p := v.post("/automations/"+auto, url.Values{"yaml": {bad}})
	want(t, p, http.StatusBadRequest, "Not saved", `class="problem" id="line-4"`, "wait: forever")
	if ver := must("GET", "/v1/automations/"+auto, nil, 200)["version"]; ver != float64(1) {
		t.Fatalf("a refused edit made version %v", ver)
	}
	v.get("/automations/" + auto)
	if p := v.post("/automations/"+auto, url.Values{"yaml": {"name: Drip\ntrigger: { event: api.call }\nsteps:\n  - wait: 2h\n"}}); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	if ver := must("GET", "/v1/automations/"+auto, nil, 200)["version"]; ver != float64(2) {
		t.Fatalf("after a good edit the version is %v", ver)
	}
	// A broadcast's test send goes to the addresses given.
	v.get("/broadcasts/" + bc)
	want(t, v.post("/broadcasts/"+bc+"/test", url.Values{"to": {"delivered@mailroom.test, delivered+two@mailroom.test"}}), http.StatusOK, "Test sent to 2 addresses")
	body := v.get("/templates/" + tpl + "/preview")
	if !strings.HasPrefix(body.header.Get("Content-Security-Policy"), "sandbox") || !strings.Contains(body.body, "Hello") {
		t.Fatalf("template preview: %v %s", body.header, body.body)
	}
	// Another workspace sees none of it.
	_, keyB := a.NewWorkspace("B", "b@example.com")
	w := newVisitor(t, a)
	w.signIn(keyB)
	for _, path := range []string{"/audiences/" + aud, "/templates/" + tpl, "/templates/" + tpl + "/preview", "/broadcasts/" + bc, "/broadcasts/" + bc + "/body", "/automations/" + auto} {
		want(t, w.get(path), http.StatusNotFound)
	}
	want(t, w.get("/inbox/"+thread), http.StatusNotFound)
}
