package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/dashboard"
	"mailroom/internal/testkit/testapp"
)

// visitor is a browser-like HTTP client: cookies kept, redirects not
// followed (the tests look at them).
type visitor struct {
	t    testing.TB
	a    *testapp.App
	c    *http.Client
	csrf string // the last page's form token
}

func newVisitor(t testing.TB, a *testapp.App) *visitor {
	jar, _ := cookiejar.New(nil)
	return &visitor{t: t, a: a, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (v *visitor) do(req *http.Request) page {
	v.t.Helper()
	res, err := v.c.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	p := page{status: res.StatusCode, header: res.Header, body: string(b)}
	if m := csrfField.FindStringSubmatch(p.body); m != nil {
		v.csrf = m[1]
	}
	return p
}

func (v *visitor) get(path string) page {
	v.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, v.a.URL+path, nil)
	return v.do(req)
}

// post submits a form; the page's CSRF token is added unless form has one.
func (v *visitor) post(path string, form url.Values) page {
	v.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", v.csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, v.a.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return v.do(req)
}

func want(t testing.TB, p page, status int, contains ...string) {
	t.Helper()
	if p.status != status {
		t.Fatalf("status %d, want %d; body:\n%s", p.status, status, p.body)
	}
	for _, c := range contains {
		if !strings.Contains(p.body, c) {
			t.Fatalf("the page lacks %q:\n%s", c, p.body)
		}
	}
}

// signIn signs v in with key and returns the overview.
func (v *visitor) signIn(key string) page {
	v.t.Helper()
	want(v.t, v.get("/sign-in"), http.StatusOK, "Workspace API key")
	p := v.post("/sign-in", url.Values{"key": {key}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/" {
		v.t.Fatalf("sign-in answered %d %s:\n%s", p.status, p.header.Get("Location"), p.body)
	}
	p = v.get("/")
	want(v.t, p, http.StatusOK, "Overview", "Last 30 days")
	return p
}

func (v *visitor) cookie(name string) *http.Cookie {
	u, _ := url.Parse(v.a.URL)
	for _, c := range v.c.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestSignInSessionAndHeaders(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	v := newVisitor(t, a)
	// Signed out, a page sends to sign-in; a POST is refused outright.
	p := v.get("/emails")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/sign-in" {
		t.Fatalf("signed out: %d %s", p.status, p.header.Get("Location"))
	}
	want(t, v.post("/suppressions", url.Values{"email": {"x@example.com"}}), http.StatusUnauthorized)

	// A wrong key: the form again, with a clear message.
	v.get("/sign-in")
	want(t, v.post("/sign-in", url.Values{"key": {"mr_" + strings.Repeat("x", 50)}}), http.StatusUnauthorized, "not valid")

	p = v.signIn(a.Key)
	h := p.header
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
	if h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", h)
	}
	if !strings.Contains(p.body, `name="viewport"`) || strings.Contains(p.body, "<script>") || strings.Contains(p.body, "style=") {
		t.Fatal("the page lacks a viewport or carries inline script or style")
	}
	c := v.cookie("mailroom_session")
	if c == nil {
		t.Fatal("no session cookie")
	}
	// The Set-Cookie attributes, read from a fresh sign-in's answer.
	v2 := newVisitor(t, a)
	v2.get("/sign-in")
	res := v2.post("/sign-in", url.Values{"key": {a.Key}})
	sc := strings.Join(res.header.Values("Set-Cookie"), "\n")
	if !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") || strings.Contains(sc, "Secure") {
		t.Fatalf("Set-Cookie (http:// public URL: no Secure): %s", sc)
	}
	// Only the hash of the cookie's token is stored.
	var n int
	if err := a.DB.QueryRow(context.Background(), `SELECT COUNT(*) FROM dashboard_sessions WHERE id = ?`, c.Value).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the cookie's token is stored as is (%d, %v)", n, err)
	}

	// Sign-out ends the session: the old cookie no longer opens a page.
	old := c.Value
	want(t, v.post("/sign-out", nil), http.StatusSeeOther)
	v3 := newVisitor(t, a)
	u, _ := url.Parse(a.URL)
	v3.c.Jar.SetCookies(u, []*http.Cookie{{Name: "mailroom_session", Value: old}})
	if p := v3.get("/"); p.status != http.StatusSeeOther {
		t.Fatalf("after sign-out the cookie still opens the overview: %d", p.status)
	}

	// The API and the other root routes are as they were.
	if r := a.Do("GET", "/v1/domains", nil); r.Status != 200 {
		t.Fatalf("/v1/domains %d", r.Status)
	}
	if r := a.Do("GET", "/nothing-here", nil); r.Status != 404 || r.ErrCode() != "not_found" {
		t.Fatalf("/nothing-here %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/healthz", nil); r.Status != 200 {
		t.Fatalf("/healthz %d", r.Status)
	}
}

func TestCSRFRefused(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	v := newVisitor(t, a)
	v.signIn(a.Key)
	v.get("/suppressions")
	form := func(csrf string) url.Values { return url.Values{"email": {"csrf@example.com"}, "csrf": {csrf}} }
	want(t, v.post("/suppressions", form("")), http.StatusForbidden, "did not come from this dashboard")
	want(t, v.post("/suppressions", form(v.csrf+"x")), http.StatusForbidden)
	// Another session's token does not do either.
	other := newVisitor(t, a)
	other.signIn(a.Key)
	other.get("/suppressions")
	want(t, v.post("/suppressions", form(other.csrf)), http.StatusForbidden)
	// A cross-origin POST with the right token is refused too.
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/suppressions", strings.NewReader(form(v.csrf).Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	want(t, v.do(req), http.StatusForbidden)
	if r := a.Do("GET", "/v1/suppressions?email=csrf@example.com", nil); strings.Contains(string(r.Body), "csrf@example.com") {
		t.Fatalf("a refused form suppressed the address: %s", r.Body)
	}
	// The sign-in form checks its own token.
	fresh := newVisitor(t, a)
	fresh.get("/sign-in")
	want(t, fresh.post("/sign-in", url.Values{"key": {a.Key}, "csrf": {"wrong"}}), http.StatusForbidden)
	// With the right token the change is made, and a GET changed nothing.
	want(t, v.post("/suppressions", form(v.csrf)), http.StatusSeeOther)
	want(t, v.get("/suppressions?ok=suppressed"), http.StatusOK, "csrf@example.com", "The address is suppressed.")
}

func TestTamperedCookieRefused(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	v := newVisitor(t, a)
	v.signIn(a.Key)
	c := v.cookie("mailroom_session")
	u, _ := url.Parse(a.URL)
	for _, bad := range []string{c.Value[:len(c.Value)-1] + flip(c.Value[len(c.Value)-1]), c.Value + "A", "", strings.Repeat("A", len(c.Value))} {
		t2 := newVisitor(t, a)
		t2.c.Jar.SetCookies(u, []*http.Cookie{{Name: "mailroom_session", Value: bad}})
		p := t2.get("/api-keys")
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/sign-in" {
			t.Fatalf("cookie %q: %d %s", bad, p.status, p.body)
		}
	}
	want(t, v.get("/api-keys"), http.StatusOK, "API keys") // the real one still works
}

func flip(b byte) string {
	if b == 'A' {
		return "B"
	}
	return "A"
}

func TestAnotherWorkspacesIDsAnswer404(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	_, keyB := a.NewWorkspace("B", "b@example.com")
	d := a.DoKey(keyB, "POST", "/v1/domains", map[string]any{"domain": "b-only.example"}).JSON()
	e := a.DoKey(keyB, "POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "B's", "text": "b"}).JSON()
	wh := a.DoKey(keyB, "POST", "/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook"}).JSON()
	v := newVisitor(t, a)
	v.signIn(a.Key)
	for _, path := range []string{"/domains/" + d["id"].(string), "/emails/" + e["id"].(string), "/emails/" + e["id"].(string) + "/body", "/webhooks/" + wh["id"].(string)} {
		want(t, v.get(path), http.StatusNotFound, "Not found")
	}
	v.get("/domains")
	want(t, v.post("/domains/"+d["id"].(string)+"/verify", nil), http.StatusNotFound)
	want(t, v.post("/webhooks/"+wh["id"].(string)+"/test", nil), http.StatusNotFound)
}

func TestHostileContentEscaped(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test",
		"subject": hostile, "html": "<p>Hi</p><script>alert(3)</script>", "tags": map[string]string{"k": "v"}})
	id := r.JSON()["id"].(string)
	v := newVisitor(t, a)
	v.signIn(a.Key)
	for _, path := range []string{"/emails", "/emails/" + id} {
		p := v.get(path)
		want(t, p, http.StatusOK, "&lt;script&gt;alert(1)&lt;/script&gt;")
		if strings.Contains(p.body, hostile) || strings.Contains(p.body, "alert(3)") {
			t.Fatalf("%s shows the subject or body unescaped:\n%s", path, p.body)
		}
	}
	// The body is only in its own document: sandboxed by the iframe and by
	// its own CSP, which allows no script.
	p := v.get("/emails/" + id)
	if !regexp.MustCompile(`<iframe[^>]* sandbox[ >]`).MatchString(p.body) && !regexp.MustCompile(`<iframe[^>]* sandbox=""`).MatchString(p.body) {
		t.Fatalf("the message iframe is not sandboxed:\n%s", p.body)
	}
	body := v.get("/emails/" + id + "/body")
	csp := body.header.Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "sandbox") || strings.Contains(csp, "script-src") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("body CSP %q", csp)
	}
	// The filter finds it by tag and by recipient, and not by another tag.
	want(t, v.get("/emails?tag=k:v&recipient=DELIVERED"), http.StatusOK, "/emails/"+id)
	if p := v.get("/emails?tag=k:w"); strings.Contains(p.body, "/emails/"+id) {
		t.Fatal("a tag filter that does not match shows the email")
	}
}

func TestSignInLinkIsOneTime(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	deps := dashboard.Deps{DB: a.DB, Clock: a.Clock, PublicURL: a.Config.PublicURL, Workspaces: a.Workspaces}
	link, exp, err := dashboard.CreateLink(context.Background(), deps, a.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(exp); d < 14*time.Minute || d > 16*time.Minute {
		t.Fatalf("link expires in %v", d)
	}
	path := strings.TrimPrefix(link, a.Config.PublicURL)
	token := strings.TrimPrefix(path, "/sign-in/link/")
	var n int
	_ = a.DB.QueryRow(context.Background(), `SELECT COUNT(*) FROM dashboard_links WHERE id = ?`, token).Scan(&n)
	if n != 0 {
		t.Fatal("the link's token is stored as is")
	}
	v := newVisitor(t, a)
	// The GET shows a button and changes nothing: twice is fine.
	want(t, v.get(path), http.StatusOK, "one-time link")
	want(t, v.get(path), http.StatusOK, "one-time link")
	p := v.post(path, nil)
	if p.status != http.StatusSeeOther {
		t.Fatalf("redeeming: %d %s", p.status, p.body)
	}
	want(t, v.get("/api-keys"), http.StatusOK, "Dashboard sign-in sessions", "Dashboard session", "this session")
	// The session's key is not one of the keys people made.
	for _, k := range a.Do("GET", "/v1/api-keys", nil).JSON()["data"].([]any) {
		if strings.HasPrefix(k.(map[string]any)["name"].(string), "Dashboard session") {
			t.Fatal("GET /v1/api-keys lists a sign-in session's key")
		}
	}
	// A second use fails, in another browser too.
	w2 := newVisitor(t, a)
	w2.get(path)
	want(t, w2.post(path, nil), http.StatusGone, "already used or has expired")
	// Signing out revokes the key the link made.
	v.get("/")
	want(t, v.post("/sign-out", nil), http.StatusSeeOther)
	var left int
	if err := a.DB.QueryRow(context.Background(), `SELECT COUNT(*) FROM api_keys WHERE session = 1`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the link's key outlived its session: %d left (%v)", left, err)
	}
	// An unknown token is a clear refusal.
	w3 := newVisitor(t, a)
	w3.get("/sign-in/link/nope")
	want(t, w3.post("/sign-in/link/nope", nil), http.StatusGone)
}

func TestRevokedKeyEndsSession(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	k := a.Do("POST", "/v1/api-keys", map[string]any{"name": "laptop"}).JSON()
	v := newVisitor(t, a)
	v.signIn(k["key"].(string))
	want(t, v.get("/domains"), http.StatusOK, "Domains")
	if r := a.Do("DELETE", "/v1/api-keys/"+k["id"].(string), nil); r.Status != 200 {
		t.Fatalf("revoking: %d", r.Status)
	}
	if p := v.get("/domains"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/sign-in" {
		t.Fatalf("after revocation: %d %s", p.status, p.body)
	}
	var n int
	_ = a.DB.QueryRow(context.Background(), `SELECT COUNT(*) FROM dashboard_sessions`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d sessions left after their key was revoked", n)
	}
}

func TestScopesAsTheAPI(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	k := a.Do("POST", "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}}).JSON()
	mine := a.DoKey(k["key"].(string), "POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "mine", "text": "x"}).JSON()
	theirs := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "theirs", "text": "x"}).JSON()
	v := newVisitor(t, a)
	want(t, v.get("/sign-in"), http.StatusOK)
	if p := v.post("/sign-in", url.Values{"key": {k["key"].(string)}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in %d", p.status)
	}
	want(t, v.get("/domains"), http.StatusForbidden, "workspace scope")
	want(t, v.get("/api-keys"), http.StatusForbidden)
	p := v.get("/emails")
	want(t, p, http.StatusOK, mine["id"].(string))
	if strings.Contains(p.body, theirs["id"].(string)) {
		t.Fatal("a send-only key's session sees another key's email")
	}
	want(t, v.get("/emails/"+theirs["id"].(string)), http.StatusNotFound)
}

func TestSignInRateLimited(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	v := newVisitor(t, a)
	v.get("/sign-in")
	var last page
	for range dashboard.SignInLimit + 1 {
		last = v.post("/sign-in", url.Values{"key": {"mr_" + strings.Repeat("y", 50)}})
	}
	want(t, last, http.StatusTooManyRequests, "Too many sign-in attempts")
	if last.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	// Even the right key waits.
	want(t, v.post("/sign-in", url.Values{"key": {a.Key}}), http.StatusTooManyRequests)
}
