package httpapi_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// importForm posts the Resend SDKs' contacts.imports form: the CSV as the
// file field, then the other fields as given.
func importForm(a *testapp.App, csv string, fields map[string]string) *testapp.Response {
	a.T.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if csv != "" {
		fw, _ := mw.CreateFormFile("file", "contacts.csv")
		fw.Write([]byte(csv))
	}
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", a.URL+"/v1/contacts/imports", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+a.Key)
	return a.Send(req)
}

// TestContactImportsResendForm: the SDKs' import form goes through the
// audience import: into an audience (audience_id, or a segment of one),
// or contacts alone, where a row that unsubscribes takes an existing
// contact off every list; what cannot map is refused by field.
func TestContactImportsResendForm(t *testing.T) {
	a := testapp.Start(t)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}).JSON()["id"].(string)

	r := importForm(a, "email,Plan\nann@example.com,pro\nbob@example.com,free\n", map[string]string{"audience_id": aud,
		"column_map": `{"email":"email","properties":{"plan":{"column":"Plan"}}}`})
	if r.Status != 201 {
		t.Fatalf("into an audience: %d %s", r.Status, r.Body)
	}
	var imp struct {
		ID, Object, Status string
		Counts             struct{ Total, Created, Failed int }
		Result             struct{ Created int }
	}
	r.Decode(t, &imp)
	if imp.Object != "contact_import" || imp.Status != "completed" || imp.Counts.Created != 2 || imp.Result.Created != 2 {
		t.Fatalf("import: %s", r.Body)
	}
	members := a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil).JSON()
	if n := len(members["contacts"].([]any)); n != 2 {
		t.Fatalf("members: %d, want 2: %v", n, members)
	}
	if got := a.Do("GET", "/v1/contacts/imports/"+imp.ID, nil).JSON(); got["id"] != imp.ID || got["audience_id"] != aud {
		t.Fatalf("get: %v", got)
	}

	// Contacts alone: ann exists, subscribed to News; her row unsubscribes.
	r = importForm(a, "email,unsubscribed\nann@example.com,true\ncat@example.com,false\n", map[string]string{
		"column_map": `{"email":"email","unsubscribed":"unsubscribed"}`})
	if r.Status != 201 || r.JSON()["audience_id"] != nil {
		t.Fatalf("contacts alone: %d %s", r.Status, r.Body)
	}
	if c := r.JSON()["counts"].(map[string]any); c["created"] != 1.0 || c["updated"] != 1.0 {
		t.Fatalf("counts: %v", c)
	}
	var list struct {
		Contacts []struct{ Email, Status string }
	}
	a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil).Decode(t, &list)
	for _, m := range list.Contacts {
		if want := map[string]string{"ann@example.com": "unsubscribed", "bob@example.com": "subscribed"}[m.Email]; m.Status != want {
			t.Errorf("%s is %s after the import, want %s", m.Email, m.Status, want)
		}
	}

	seg := a.Do("POST", "/v1/segments", map[string]any{"name": "all"}).JSON()["id"].(string)
	for _, c := range []struct {
		name   string
		csv    string
		fields map[string]string
		status int
		word   string
	}{
		{"no file", "", nil, 400, "file is required"},
		{"topics", "email\nx@example.com\n", map[string]string{"topics": `[{"id":"t","subscription":"opt_in"}]`}, 422, "topics"},
		{"skip", "email\nx@example.com\n", map[string]string{"on_conflict": "skip"}, 422, "on_conflict"},
		{"rule segment", "email\nx@example.com\n", map[string]string{"segments": `[{"id":"` + seg + `"}]`}, 422, "segments[0]"},
		{"bad column_map", "email\nx@example.com\n", map[string]string{"column_map": `[1]`}, 400, "column_map"},
		{"no audience", "email\nx@example.com\n", map[string]string{"audience_id": "aud_nope"}, 404, ""},
	} {
		r := importForm(a.For(t), c.csv, c.fields)
		if r.Status != c.status || !bytes.Contains(r.Body, []byte(c.word)) {
			t.Errorf("%s: %d %s, want %d naming %q", c.name, r.Status, r.Body, c.status, c.word)
		}
	}
	if n := len(a.Do("GET", "/v1/contacts/imports", nil).JSON()["data"].([]any)); n != 2 {
		t.Errorf("list: %d imports, want 2", n)
	}
}
