package dashboard_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testapp"
)

// upload posts a CSV file to the audience's import form; csrf "" leaves
// the token out.
func (v *visitor) upload(path, filename, content, csrf string, fields ...string) page {
	v.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if csrf != "" {
		_ = mw.WriteField("csrf", csrf)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	fw, _ := mw.CreateFormFile("file", filename)
	_, _ = fw.Write([]byte(content))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, v.a.URL+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return v.do(req)
}

// TestAreaForms: the forms of the later areas change only with the
// session's CSRF token and only the session's own workspace (another's ids
// answer 404 and change nothing); an import's page shows it running (a
// progress bar, reloading itself) and a node's lost import as stopped; a
// broadcast is scheduled and cancelled; a template that does not parse is
// refused with what was typed kept.
func TestAreaForms(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	must := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		r := a.Do(method, path, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r.JSON()
	}
	aud := must("POST", "/v1/audiences", map[string]any{"name": "News"}, 201)["id"].(string)
	must("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "ann@example.net", "attributes": map[string]any{"first_name": "Ann"}}}, 201)
	tpl := must("POST", "/v1/templates", map[string]any{"name": "Welcome", "subject": "Hi", "html": "<p>v1</p>"}, 201)["id"].(string)
	bc := must("POST", "/v1/broadcasts", map[string]any{"from": "onboarding@mailroom.test", "audience_id": aud, "subject": "S {{ first_name }}", "html": "<p>Dear {{ first_name }}</p>"}, 201)["id"].(string)

	v := newVisitor(t, a)
	v.signIn(a.Key)
	v.get("/broadcasts/" + bc)
	token := v.csrf

	// Without the token (or with a wrong one) every form is refused and
	// nothing changes.
	posts := map[string]url.Values{
		"/audiences": {"name": {"Sneaky"}}, "/templates": {"name": {"Sneaky"}, "html": {"x"}}, "/templates/preview": {"html": {"x"}},
		"/templates/" + tpl: {"name": {"Renamed"}, "html": {"<p>v2</p>"}}, "/templates/" + tpl + "/publish": {},
		"/broadcasts": {"from": {"onboarding@mailroom.test"}}, "/broadcasts/" + bc: {"subject": {"changed"}},
		"/broadcasts/" + bc + "/send": {"action": {"now"}}, "/broadcasts/" + bc + "/cancel": {},
		"/broadcasts/" + bc + "/test": {"to": {"delivered@mailroom.test"}},
	}
	for path, form := range posts {
		for _, bad := range []string{"", token + "x"} {
			f := url.Values{}
			for k, vs := range form {
				f[k] = vs
			}
			f.Set("csrf", bad)
			if p := v.post(path, f); p.status != http.StatusForbidden {
				t.Fatalf("POST %s with csrf %q: %d", path, bad, p.status)
			}
		}
	}
	if p := v.upload("/audiences/"+aud+"/import", "x.csv", "email\nsneaky@example.net\n", ""); p.status != http.StatusForbidden {
		t.Fatalf("an upload without the token: %d", p.status)
	}
	if r := must("GET", "/v1/broadcasts/"+bc, nil, 200); r["status"] != "draft" || r["subject"] != "S {{ first_name }}" {
		t.Fatalf("a refused form changed the broadcast: %v", r)
	}
	if n := len(must("GET", "/v1/audiences", nil, 200)["audiences"].([]any)); n != 1 {
		t.Fatalf("%d audiences after refused forms", n)
	}
	if n := must("GET", "/v1/templates/"+tpl, nil, 200)["latest_version"]; n != float64(1) {
		t.Fatalf("a refused form made template version %v", n)
	}

	// A template that does not parse is refused, what was typed kept.
	v.get("/templates/" + tpl)
	p := v.post("/templates/"+tpl, url.Values{"name": {"Welcome"}, "slug": {"welcome"}, "html": {"<p>{{#if}}</p>"}, "subject": {"Kept subject"}})
	want(t, p, http.StatusBadRequest, "Not saved", "Kept subject", "{{#if}}")
	// The draft preview renders what is typed, with samples, in a sandbox.
	p = v.post("/templates/preview", url.Values{"html": {"<p>Hi {{ first_name }}</p>"}})
	if p.status != 200 || !strings.Contains(p.body, "Hi [first_name]") || !strings.HasPrefix(p.header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("draft preview: %d %v %s", p.status, p.header, p.body)
	}

	// The broadcast: a preview for a member by address, then scheduled
	// (a time in the past refused), then cancelled.
	want(t, v.get("/broadcasts/"+bc+"?member=ann@example.net"), http.StatusOK, "S Ann")
	if p := v.get("/broadcasts/" + bc + "/preview?email=ann@example.net"); !strings.Contains(p.body, "Dear Ann") || !strings.HasPrefix(p.header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("member preview: %v %s", p.header, p.body)
	}
	want(t, v.get("/broadcasts/"+bc+"?member=nobody@example.net"), http.StatusOK, "member")
	v.get("/broadcasts/" + bc)
	want(t, v.post("/broadcasts/"+bc+"/send", url.Values{"action": {"schedule"}, "scheduled_at": {"2020-01-01T09:00"}}), http.StatusBadRequest, "future")
	at := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Minute)
	if p := v.post("/broadcasts/"+bc+"/send", url.Values{"action": {"schedule"}, "scheduled_at": {at.Format("2006-01-02T15:04")}}); p.status != http.StatusSeeOther {
		t.Fatalf("schedule: %d %s", p.status, p.body)
	}
	if r := must("GET", "/v1/broadcasts/"+bc, nil, 200); r["status"] != "scheduled" || r["scheduled_at"] != at.Format(time.RFC3339) {
		t.Fatalf("after scheduling: %v %v", r["status"], r["scheduled_at"])
	}
	want(t, v.get("/broadcasts/"+bc), http.StatusOK, "Cancel broadcast", at.Format("2006-01-02 15:04"))
	if p := v.post("/broadcasts/"+bc+"/cancel", nil); p.status != http.StatusSeeOther {
		t.Fatalf("cancel: %d %s", p.status, p.body)
	}
	if r := must("GET", "/v1/broadcasts/"+bc, nil, 200); r["status"] != "cancelled" {
		t.Fatalf("after cancelling: %v", r["status"])
	}

	// An import's page: running shows a progress bar and reloads itself;
	// one its node lost (running long past) shows as stopped. Rows as an
	// import started on a node would leave them.
	now := time.Now()
	for id, at := range map[string]time.Time{"imp_running": now, "imp_lost": now.Add(-time.Hour)} {
		if _, err := a.DB.Exec(t.Context(), `INSERT INTO dashboard_imports (id, workspace_id, audience_id, filename, row_count, dry_run, status, created_at) VALUES (?, ?, ?, ?, ?, 0, 'running', ?)`,
			id, a.WorkspaceID, aud, "big.csv", 9000, store.Millis(at)); err != nil {
			t.Fatal(err)
		}
	}
	p = v.get("/audiences/" + aud + "/imports/imp_running")
	want(t, p, http.StatusOK, "Importing 9000 rows", "<progress", `http-equiv="refresh"`)
	p = v.get("/audiences/" + aud + "/imports/imp_lost")
	want(t, p, http.StatusOK, "Stopped", "nothing was imported")
	if strings.Contains(p.body, `http-equiv="refresh"`) {
		t.Fatal("a lost import's page keeps reloading")
	}
	// A real import: the upload's mapping page, then the import's page,
	// then its report.
	v.get("/audiences/" + aud)
	job := v.importFile(aud, "more.csv", "email,first_name\nbob@example.net,Bob\n", "").header.Get("Location")
	testapp.Eventually(t, 10*time.Second, func() bool { return strings.Contains(v.get(job).body, `id="import-report"`) }, "the import never reported")
	// A check (dry run) reports what would happen and writes nothing.
	v.get("/audiences/" + aud)
	p = v.importFile(aud, "check.csv", "email\ncarl@example.net\nbob@example.net\n", "check")
	want(t, p, http.StatusOK, "Checked: nothing was written yet", `<dd id="c-created">1</dd>`, `<dd id="c-unchanged">1</dd>`)
	if n := must("GET", "/v1/audiences/"+aud+"/contacts", nil, 200)["contact_count"]; n != float64(2) {
		t.Fatalf("a check wrote contacts: %v", n)
	}
	check := job
	// An import's page under another audience's path is not found.
	other := must("POST", "/v1/audiences", map[string]any{"name": "Other"}, 201)["id"].(string)
	want(t, v.get(strings.Replace(check, aud, other, 1)), http.StatusNotFound)
	// A file over the import's 8 MB is refused, 413.
	v.get("/audiences/" + aud)
	want(t, v.upload("/audiences/"+aud+"/import", "huge.csv", "email\n"+strings.Repeat("someone@example.net\n", 9<<20/20), v.csrf), http.StatusRequestEntityTooLarge, "Split the file")
	// A file that is not CSV the import reads is refused at once.
	v.get("/audiences/" + aud)
	want(t, v.upload("/audiences/"+aud+"/import", "bad.csv", "email,name\na@example.net\n", v.csrf), http.StatusBadRequest, "line 2")

	// Another workspace: every id answers 404 and nothing changes.
	_, keyB := a.NewWorkspace("B", "b@example.com")
	w := newVisitor(t, a)
	w.signIn(keyB)
	for _, path := range []string{"/audiences/" + aud + "/imports/imp_running", job, "/templates/" + tpl + "?version=1",
		"/broadcasts/" + bc + "/preview", "/broadcasts/" + bc + "?member=ann@example.net"} {
		want(t, w.get(path), http.StatusNotFound)
	}
	w.get("/audiences")
	for path, form := range map[string]url.Values{"/templates/" + tpl: {"name": {"Taken"}, "html": {"x"}}, "/templates/" + tpl + "/publish": {},
		"/broadcasts/" + bc: {"subject": {"taken"}}, "/broadcasts/" + bc + "/send": {"action": {"now"}}, "/broadcasts/" + bc + "/cancel": {}} {
		want(t, w.post(path, form), http.StatusNotFound)
	}
	want(t, w.upload("/audiences/"+aud+"/import", "x.csv", "email\nsneaky@example.net\n", w.csrf), http.StatusNotFound)
	if r := must("GET", "/v1/templates/"+tpl, nil, 200); r["name"] != "Welcome" || r["published_version_id"] != nil {
		t.Fatalf("another workspace changed the template: %v", r)
	}
	if n := must("GET", "/v1/audiences/"+aud+"/contacts", nil, 200)["contact_count"]; n != float64(2) {
		t.Fatalf("the audience has %v contacts", n)
	}
}
