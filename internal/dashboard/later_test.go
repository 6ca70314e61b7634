package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestLaterAreasReadOnly: the inbox, audiences, templates, broadcasts and
// automations pages show what the API made, escaped, with bodies only in
// their sandboxed frames; another workspace's ids answer 404.
func TestLaterAreasReadOnly(t *testing.T) {
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
		"/broadcasts": "Launch &lt;img", "/broadcasts/" + bc: "Recipients",
		"/automations": "Drip &lt;img", "/automations/" + auto: "api.call",
		"/inbox": "Thread &lt;img",
	} {
		p := v.get(path)
		want(t, p, http.StatusOK, wantText)
		if strings.Contains(p.body, evil) || strings.Contains(p.body, "alert(2)") {
			t.Fatalf("%s shows hostile text unescaped", path)
		}
	}
	want(t, v.get("/inbox/"+thread), http.StatusOK, "Thread &lt;img", "sandbox")
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
