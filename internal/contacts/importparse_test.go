package contacts

import (
	"strings"
	"testing"

	"mailroom/internal/apierr"
)

// checkParse holds what every parse must give: rows numbered 1..n within
// the limit, or a client error (400 or 413) that says why, never a panic.
func checkParse(t *testing.T, rows []ImportRow, err error) {
	t.Helper()
	if err != nil {
		e, ok := apierr.As(err)
		if !ok || (e.Status != 400 && e.Status != 413) || e.Message == "" {
			t.Fatalf("error %v is not a client error with a message", err)
		}
		return
	}
	if len(rows) > MaxImportRows {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if r.Row != i+1 {
			t.Fatalf("row %d numbered %d", i+1, r.Row)
		}
		if r.Err == "" && r.Attributes == nil {
			t.Fatalf("row %d: good row without attributes", r.Row)
		}
	}
}

func FuzzParseCSV(f *testing.F) {
	for _, s := range []string{
		"email\na@example.com\n",
		"\ufeffEmail,Name,tags\r\na@example.com,\"A, B\",\"x,y\"\r\n",
		"Mail;Vorname\nb@example.com;B\n",
		"email,name\na@example.com,A\nb@example.com\n",
		"email,name\na@example.com,\"A\n",
		"email\n\x00\x01\n",
		"email,subscribed,status\na@example.com,yes,pending\n",
		"email,,x\n",
		"Email Address,First Name,TAGS\r\na@example.com,A,\"\"\"VIP\"\",\"\"Early bird\"\"\"\r\n",
		"\xff\xfee\x00m\x00a\x00i\x00l\x00\n\x00a\x00@\x00x\x00\n\x00",
		"Email Address,email\na@x,b@x\n",
		"",
	} {
		f.Add([]byte(s))
	}
	m := ImportMapping{Attr: map[string]string{"Name": "first_name"}, Ignore: map[string]bool{"x": true}}
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ParseCSV(data, m)
		checkParse(t, rows, err)
	})
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`[{"email":"a@example.com","tags":"x, y","attributes":{"k":"v"}}]`,
		`{"contacts":[{"email_address":"a@example.com","subscribed":false}],"dry_run":true}`,
		`{"data":[{"email":"a@example.com","data":{"k":"v"}}]}`,
		`{"email":"a@example.com","status":"pending","first_name":"A"}`,
		`[1, "x", null, {"email": 3}, {"tags": [1]}]`,
		`{"contacts":[],"extra":1}`,
		`3`, `[`, `"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, _, err := ParseJSON(data, ImportMapping{})
		checkParse(t, rows, err)
	})
}

func TestParseCSVRows(t *testing.T) {
	rows, err := ParseCSV([]byte("E-Mail;Name;Tags;Skip\r\nA@Example.com;Ann;\"a, b\";z\r\n"),
		ImportMapping{Email: "E-Mail", Attr: map[string]string{"Name": "first_name"}, Ignore: map[string]bool{"Skip": true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[0]
	if r.Email != "A@Example.com" || len(r.Tags) != 2 || r.Tags[1] != "b" || r.Attributes["first_name"] != "Ann" || len(r.Attributes) != 1 {
		t.Fatalf("row %+v", r)
	}
}

func TestParseJSONForms(t *testing.T) {
	for _, body := range []string{
		`[{"email":"a@example.com"}]`,
		`{"contacts":[{"email":"a@example.com"}]}`,
		`{"data":[{"email":"a@example.com"}]}`,
		`{"email":"a@example.com"}`,
	} {
		rows, _, err := ParseJSON([]byte(body), ImportMapping{})
		if err != nil || len(rows) != 1 || rows[0].Email != "a@example.com" || rows[0].Err != "" {
			t.Errorf("%s: %+v %v", body, rows, err)
		}
	}
	_, dry, err := ParseJSON([]byte(`{"contacts":[],"dry_run":true}`), ImportMapping{})
	if err != nil || dry == nil || !*dry {
		t.Fatalf("dry_run in the envelope: %v %v", dry, err)
	}
	rows, _, _ := ParseJSON([]byte(`[{"email":"a@example.com","tags":[1]}]`), ImportMapping{})
	if rows[0].Err == "" {
		t.Fatal("tags of numbers accepted")
	}
}

// FuzzSplitTags: any tags cell gives trimmed, non-empty tags without
// quotes, and never panics.
func FuzzSplitTags(f *testing.F) {
	for _, s := range []string{`"a","b"`, `a, b;c`, `"unterminated`, `"a""b",c`, `;;`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tag := range splitTags(s) {
			if tag == "" || tag != strings.TrimSpace(tag) || strings.HasPrefix(tag, `"`) || strings.HasSuffix(tag, `"`) {
				t.Fatalf("splitTags(%q) gave %q", s, tag)
			}
		}
	})
}

// TestParseCSVRoles: a column's role chosen in Roles wins over its name;
// a column named for a role another column was given is a merge field;
// a role that does not exist is refused.
func TestParseCSVRoles(t *testing.T) {
	data := []byte("Email Address,First Name,Nick,TAGS,Phone\na@example.com,Ann,Annie,\"\"\"x\"\",\"\"y\"\"\",555\n")
	rows, err := ParseCSV(data, ImportMapping{Roles: map[string]string{"Nick": "first_name", "TAGS": "attribute", "Phone": "ignore"}})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.FirstName != "Annie" || r.Attributes["first_name"] != "Annie" || len(r.Tags) != 0 || r.Attributes["TAGS"] != `"x","y"` {
		t.Fatalf("row %+v", r)
	}
	if _, ok := r.Attributes["Phone"]; ok {
		t.Fatalf("the ignored column was read: %+v", r)
	}
	if _, err := ParseCSV(data, ImportMapping{Roles: map[string]string{"Nick": "nickname"}}); !apierr.Is(err, "invalid_request") || !strings.Contains(err.Error(), `"Nick"`) {
		t.Fatalf("an unknown role: %v", err)
	}
}

// TestPreviewCSV: the preview reads as ParseCSV reads (a UTF-16 file, the
// same refusals) without needing an email column, and proposes the
// import's own roles.
func TestPreviewCSV(t *testing.T) {
	utf16 := []byte("\xff\xfeA\x00d\x00r\x00,\x00T\x00A\x00G\x00S\x00\n\x00x\x00,\x00y\x00\n\x00")
	p, err := PreviewCSV(utf16, 5)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Text) != "Adr,TAGS\nx,y\n" || p.Total != 1 || len(p.Rows) != 1 || p.Proposed[0] != "attribute" || p.Proposed[1] != "tags" {
		t.Fatalf("preview %+v", p)
	}
	for _, bad := range []string{"email\n", "email,name\na@x,1\nb@x\n", "email\n" + strings.Repeat("a@x\n", MaxImportRows+1)} {
		if _, err := PreviewCSV([]byte(bad), 5); err == nil {
			t.Fatalf("%.40q previewed", bad)
		}
	}
}
