package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

func TestContactsVCard(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	s.Errors = scenario.Flat
	cards := "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ann Lee\r\nN:Lee;Ann;;;\r\nEMAIL;PREF=1:Ann@Example.com\r\nEMAIL:other@example.com\r\nCATEGORIES:VIP,friends\r\nEND:VCARD\r\n" +
		"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Bob Stone\r\nEMAIL:bob@example.com\r\nEND:VCARD\r\n" +
		"BEGIN:VCARD\r\nVERSION:4.0\r\nEMAIL:ann@example.com\r\nEND:VCARD\r\n"
	huge := "BEGIN:VCARD\r\nVERSION:4.0\r\nEMAIL:h@example.com\r\n" + strings.Repeat("NOTE:x\r\n", 10000) + "END:VCARD\r\n"
	var many strings.Builder
	for range 1001 {
		many.WriteString("BEGIN:VCARD\r\nEMAIL:m@example.com\r\nEND:VCARD\r\n")
	}
	s.Run(t,
		sc{Name: "import cards", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"vcard": cards}, Status: 201,
			Shape: shape{"contacts": []any{
				shape{"email": "ann@example.com", "first_name": "Ann", "last_name": "Lee", "tags": []any{"friends", "vip"}},
				shape{"email": "bob@example.com", "first_name": "Bob", "last_name": "Stone"}},
				"skipped": []any{shape{"card": 3, "email": "ann@example.com"}}}},
		sc{Name: "again: all taken", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"vcard": cards}, Status: 201,
			Shape: shape{"contacts": scenario.Len(0), "skipped": scenario.Len(3)}},
		sc{Name: "vcard with fields", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"vcard": cards, "email": "x@example.com"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "no card", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"vcard": "hello"}, Status: 400, Code: "invalid_request"},
		sc{Name: "card without an address", Method: "POST", Path: "/v1/contacts",
			Body: map[string]any{"vcard": "BEGIN:VCARD\r\nFN:X\r\nEND:VCARD\r\n"}, Status: 400, Code: "invalid_request"},
		sc{Name: "unterminated card", Method: "POST", Path: "/v1/contacts",
			Body: map[string]any{"vcard": "BEGIN:VCARD\r\nEMAIL:u@example.com\r\n"}, Status: 400, Code: "invalid_request"},
		sc{Name: "10,000 properties", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"vcard": huge}, Status: 400, Code: "invalid_request"},
		sc{Name: "1001 cards", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"vcard": many.String()}, Status: 400, Code: "invalid_request"},
		sc{Name: "nothing half-written", Method: "GET", Path: "/v1/contacts", Status: 200, Shape: shape{"contacts": scenario.Len(2)}},
	)

	// Accept: text/vcard answers the selection as a .vcf.
	req, _ := http.NewRequest("GET", a.URL+"/v1/contacts?q=ann", nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("Accept", "text/vcard")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	vcf := string(body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/vcard") ||
		strings.Count(vcf, "BEGIN:VCARD") != 1 || !strings.Contains(vcf, "EMAIL:ann@example.com") || !strings.Contains(vcf, "CATEGORIES:friends\r\n") || !strings.Contains(vcf, "CATEGORIES:vip\r\n") {
		t.Fatalf("export: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), vcf)
	}
	// What was exported imports again as the same person.
	r := a.Do("DELETE", "/v1/contacts/"+firstContactID(t, a, "ann@example.com"), nil)
	if r.Status != 200 {
		t.Fatalf("delete: %d", r.Status)
	}
	r = a.Do("POST", "/v1/contacts", map[string]any{"vcard": vcf})
	if r.Status != 201 || !strings.Contains(string(r.Body), `"first_name":"Ann","id"`) || !strings.Contains(string(r.Body), `"tags":["friends","vip"]`) {
		t.Fatalf("round trip: %d %s", r.Status, r.Body)
	}
}

func firstContactID(t *testing.T, a *testapp.App, email string) string {
	t.Helper()
	r := a.Do("GET", "/v1/contacts?lookup="+email, nil)
	var p struct {
		Contacts []struct {
			ID string `json:"id"`
		} `json:"contacts"`
	}
	r.Decode(t, &p)
	if len(p.Contacts) != 1 {
		t.Fatalf("lookup %s: %s", email, r.Body)
	}
	return p.Contacts[0].ID
}
