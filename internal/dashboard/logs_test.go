package dashboard_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// TestLogsPage: an API call shows on the Logs page of a signed-in session,
// the filters narrow the list, and the detail view shows the call without
// its body; another workspace's session finds neither.
func TestLogsPage(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	if r := a.Do("GET", "/v1/domains/dom_logsmissing", nil); r.Status != http.StatusNotFound {
		t.Fatalf("missing domain: %d", r.Status)
	}
	if r := a.Do("POST", "/v1/suppressions", map[string]any{"email": "hidden-7c1@example.com"}); r.Status != http.StatusCreated {
		t.Fatalf("suppression: %d %s", r.Status, r.Body)
	}
	v := newVisitor(t, a)
	v.signIn(a.Key)
	var p page
	testapp.Eventually(t, 10*time.Second, func() bool {
		p = v.get("/logs")
		return strings.Contains(p.body, "/v1/domains/dom_logsmissing") && strings.Contains(p.body, "/v1/suppressions")
	}, "the Logs page does not list the calls")
	want(t, p, http.StatusOK, `href="/logs" aria-current="page"`, "404", "not_found")

	p = v.get("/logs?status=4xx&method=GET")
	want(t, p, http.StatusOK, "/v1/domains/dom_logsmissing")
	if strings.Contains(p.body, "/v1/suppressions") {
		t.Fatal("status=4xx&method=GET lists the POST that answered 201")
	}
	link := regexp.MustCompile(`href="(/logs/log_[0-9a-z]+)"`).FindStringSubmatch(p.body)
	if link == nil {
		t.Fatalf("no link to a call:\n%s", p.body)
	}
	p = v.get(link[1])
	want(t, p, http.StatusOK, "GET /v1/domains/dom_logsmissing", "not_found", "content not kept")
	if strings.Contains(p.body, a.Key) || strings.Contains(v.get("/logs").body, "hidden-7c1") {
		t.Fatal("the Logs pages show the API key or a body's content")
	}
	want(t, v.get("/logs?status=abc"), http.StatusBadRequest, "not a status code")

	_, other := a.NewWorkspace("Other", "other@example.com")
	o := newVisitor(t, a)
	o.signIn(other)
	if p := o.get("/logs"); strings.Contains(p.body, "dom_logsmissing") {
		t.Fatal("another workspace's Logs page lists the call")
	}
	want(t, o.get(link[1]), http.StatusNotFound)
}
