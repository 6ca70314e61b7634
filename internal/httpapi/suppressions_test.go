package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/testapp"
)

type suppressionBody struct {
	ID            string  `json:"id"`
	Email         string  `json:"email"`
	Reason        string  `json:"reason"`
	IsGlobal      bool    `json:"is_global"`
	CreatedAt     string  `json:"created_at"`
	SourceEmailID *string `json:"source_email_id"`
}

type suppressionPage struct {
	Suppressions []suppressionBody `json:"suppressions"`
	NextCursor   *string           `json:"next_cursor"`
	HasMore      bool              `json:"has_more"`
	Total        int               `json:"total"`
}

// flatErr asserts the spec's flat error shape { error: <code>, message, hint? }
// with the given status and code.
func flatErr(t *testing.T, r *testapp.Response, status int, code string) {
	t.Helper()
	m := r.JSON()
	got, ok := m["error"].(string)
	if r.Status != status || !ok || got != code {
		t.Fatalf("want %d flat %q, got %d %s", status, code, r.Status, r.Body)
	}
	if msg, ok := m["message"].(string); !ok || msg == "" {
		t.Fatalf("flat error without message: %s", r.Body)
	}
	if h, present := m["hint"]; present {
		if _, ok := h.(string); !ok {
			t.Fatalf("hint is not a string: %s", r.Body)
		}
	}
}

func listSuppressions(t *testing.T, a *testapp.App, key, query string) suppressionPage {
	t.Helper()
	r := a.DoKey(key, "GET", "/v1/suppressions"+query, nil)
	if r.Status != 200 {
		t.Fatalf("list %s: %d %s", query, r.Status, r.Body)
	}
	var p suppressionPage
	r.Decode(t, &p)
	return p
}

func TestSuppressionsRoutes(t *testing.T) {
	a := testapp.Start(t)
	ctx := context.Background()

	// Create: normalized address, default reason, 201; again: 200 with the
	// existing row unchanged (first reason wins).
	r := a.Do("POST", "/v1/suppressions", map[string]any{"email": "Ann <Ann@Example.COM>"})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var ann suppressionBody
	r.Decode(t, &ann)
	if ann.Email != "ann@example.com" || ann.Reason != "manual" || ann.IsGlobal || ann.SourceEmailID != nil || ann.ID == "" {
		t.Fatalf("created %+v", ann)
	}
	r = a.Do("POST", "/v1/suppressions", map[string]any{"email": "ANN@example.com", "reason": "bounce"})
	var again suppressionBody
	r.Decode(t, &again)
	if r.Status != 200 || again != ann {
		t.Fatalf("repeat create: %d %+v", r.Status, again)
	}
	r = a.Do("POST", "/v1/suppressions", map[string]any{"email": "bob@example.com", "reason": "complaint"})
	var bob suppressionBody
	r.Decode(t, &bob)
	if r.Status != 201 || bob.Reason != "complaint" {
		t.Fatalf("bob: %d %s", r.Status, r.Body)
	}

	// IDN domains are stored in punycode; a filter in either form finds them.
	r = a.Do("POST", "/v1/suppressions", map[string]any{"email": "kim@Bücher.example", "reason": "unsub"})
	var kim suppressionBody
	r.Decode(t, &kim)
	if r.Status != 201 || kim.Email != "kim@xn--bcher-kva.example" {
		t.Fatalf("IDN: %d %s", r.Status, r.Body)
	}
	for _, q := range []string{"kim@bücher.example", "KIM@xn--bcher-kva.example"} {
		if p := listSuppressions(t, a, a.Key, "?email="+url.QueryEscape(q)); p.Total != 1 || p.Suppressions[0].ID != kim.ID {
			t.Fatalf("filter %s: %+v", q, p)
		}
	}
	if r := a.Do("DELETE", "/v1/suppressions?email="+url.QueryEscape("kim@bücher.example"), nil); r.Status != 200 || r.JSON()["deleted"] != kim.ID {
		t.Fatalf("IDN delete: %d %s", r.Status, r.Body)
	}

	// Bad bodies, all flat.
	for _, c := range []struct {
		body any
		code string
	}{
		{`{"email": "x@example.com"`, "invalid_json"},
		{``, "invalid_json"},
		{`[]`, "invalid_request"},
		{`{}`, "invalid_request"},
		{map[string]any{"email": ""}, "invalid_request"},
		{map[string]any{"email": 5}, "invalid_request"},
		{map[string]any{"email": "not-an-address"}, "invalid_request"},
		{map[string]any{"email": "a@example.com\r\nBcc: b@example.com"}, "invalid_request"},
		{map[string]any{"email": "a@example.com", "reason": "spam"}, "invalid_request"},
		{map[string]any{"email": "a@example.com", "reason": 1}, "invalid_request"},
		{map[string]any{"email": "a@example.com", "is_global": true}, "invalid_request"},
	} {
		flatErr(t, a.Do("POST", "/v1/suppressions", c.body), 400, c.code)
	}

	// A global row (operator command) is listed with is_global and applies
	// here, but cannot be deleted by the workspace.
	globalID, _, err := suppressions.AddGlobal(ctx, a.App.DB, "Everyone@Example.com", suppressions.ReasonComplaint, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := listSuppressions(t, a, a.Key, "")
	if p.Total != 3 || len(p.Suppressions) != 3 || p.HasMore || p.NextCursor != nil {
		t.Fatalf("list: %+v", p)
	}
	var sawGlobal bool
	for _, s := range p.Suppressions {
		if s.ID == globalID {
			sawGlobal = s.IsGlobal && s.Email == "everyone@example.com"
		} else if s.IsGlobal {
			t.Fatalf("workspace row shown as global: %+v", s)
		}
	}
	if !sawGlobal {
		t.Fatalf("global row missing or wrong: %+v", p.Suppressions)
	}
	flatErr(t, a.Do("DELETE", "/v1/suppressions/"+globalID, nil), 404, "not_found")
	flatErr(t, a.Do("DELETE", "/v1/suppressions?id="+globalID, nil), 404, "not_found")
	r = a.Do("DELETE", "/v1/suppressions?email=everyone@example.com", nil)
	flatErr(t, r, 404, "not_found")
	if r.JSON()["hint"] == nil {
		t.Fatalf("no hint that the row is global: %s", r.Body)
	}

	// Filters.
	for _, c := range []struct {
		query string
		want  int
	}{
		{"?reason=complaint", 2},
		{"?reason=manual", 1},
		{"?reason=unsub", 0},
		{"?email=" + url.QueryEscape("ANN@example.com"), 1},
		{"?email=everyone@example.com", 1},
		{"?email=nobody@example.com", 0},
		{"?email=bob@example.com&reason=manual", 0},
		{"?email=bob@example.com&reason=complaint", 1},
	} {
		p := listSuppressions(t, a, a.Key, c.query)
		if p.Total != c.want || len(p.Suppressions) != c.want {
			t.Fatalf("%s: total %d rows %d, want %d", c.query, p.Total, len(p.Suppressions), c.want)
		}
	}
	flatErr(t, a.Do("GET", "/v1/suppressions?reason=spam", nil), 400, "invalid_request")
	flatErr(t, a.Do("GET", "/v1/suppressions?reason=", nil), 400, "invalid_request")
	for _, l := range []string{"0", "201", "-1", "ten"} {
		flatErr(t, a.Do("GET", "/v1/suppressions?limit="+l, nil), 422, "invalid_limit")
	}
	flatErr(t, a.Do("GET", "/v1/suppressions?before=garbage", nil), 422, "invalid_cursor")

	// Another workspace sees its own rows and the global one, never ours,
	// and our ids answer 404 to it (and its ids to us).
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	r = a.DoKey(otherKey, "POST", "/v1/suppressions", map[string]any{"email": "ann@example.com", "reason": "unsub"})
	var theirs suppressionBody
	r.Decode(t, &theirs)
	if r.Status != 201 || theirs.ID == ann.ID || theirs.Reason != "unsub" {
		t.Fatalf("other workspace create: %d %s", r.Status, r.Body)
	}
	p = listSuppressions(t, a, otherKey, "")
	if p.Total != 2 || len(p.Suppressions) != 2 {
		t.Fatalf("other workspace list: %+v", p)
	}
	flatErr(t, a.DoKey(otherKey, "DELETE", "/v1/suppressions/"+bob.ID, nil), 404, "not_found")
	flatErr(t, a.DoKey(otherKey, "DELETE", "/v1/suppressions?email=bob@example.com", nil), 404, "not_found")
	flatErr(t, a.Do("DELETE", "/v1/suppressions/"+theirs.ID, nil), 404, "not_found")

	// Delete by id, by email (either spelling), and the ?id= form.
	r = a.Do("DELETE", "/v1/suppressions/"+ann.ID, nil)
	if r.Status != 200 || r.JSON()["deleted"] != ann.ID {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	flatErr(t, a.Do("DELETE", "/v1/suppressions/"+ann.ID, nil), 404, "not_found")
	r = a.Do("DELETE", "/v1/suppressions?email="+url.QueryEscape("Bob@EXAMPLE.com"), nil)
	if r.Status != 200 || r.JSON()["deleted"] != bob.ID {
		t.Fatalf("delete by email: %d %s", r.Status, r.Body)
	}
	flatErr(t, a.Do("DELETE", "/v1/suppressions?email=bob@example.com", nil), 404, "not_found")
	r = a.Do("POST", "/v1/suppressions", map[string]any{"email": "carl@example.com", "reason": "unsub"})
	var carl suppressionBody
	r.Decode(t, &carl)
	r = a.Do("DELETE", "/v1/suppressions?id="+carl.ID, nil)
	if r.Status != 200 || r.JSON()["deleted"] != carl.ID {
		t.Fatalf("delete ?id=: %d %s", r.Status, r.Body)
	}
	flatErr(t, a.Do("DELETE", "/v1/suppressions", nil), 400, "invalid_request")
	flatErr(t, a.Do("DELETE", "/v1/suppressions?id=x&email=y@example.com", nil), 400, "invalid_request")
	p = listSuppressions(t, a, a.Key, "")
	if p.Total != 1 || p.Suppressions[0].ID != globalID {
		t.Fatalf("after deletes: %+v", p)
	}
	// The other workspace's row for the same address is untouched.
	if p := listSuppressions(t, a, otherKey, "?email=ann@example.com"); p.Total != 1 || p.Suppressions[0].ID != theirs.ID {
		t.Fatalf("other workspace lost its row: %+v", p)
	}

	// Scope and auth errors on these routes are flat too.
	r = a.Do("POST", "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}})
	sendKey, _ := r.JSON()["key"].(string)
	flatErr(t, a.DoKey(sendKey, "GET", "/v1/suppressions", nil), 403, "insufficient_scope")
	flatErr(t, a.DoKey(sendKey, "POST", "/v1/suppressions", map[string]any{"email": "z@example.com"}), 403, "insufficient_scope")
	flatErr(t, a.DoKey("", "GET", "/v1/suppressions", nil), 401, "unauthorized")
}

func TestSuppressionsPagination(t *testing.T) {
	fake := clock.NewFake(time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC))
	a := testapp.Start(t, testapp.WithClock(fake), testapp.WithEnv("MAILROOM_RATE_LIMIT", "100000"))
	created := map[string]int{} // id -> creation order
	for i := range 120 {
		reason := "manual"
		if i%2 == 0 {
			reason = "bounce"
		}
		r := a.Do("POST", "/v1/suppressions", map[string]any{"email": fmt.Sprintf("user%03d@example.com", i), "reason": reason})
		if r.Status != 201 {
			t.Fatalf("create %d: %d %s", i, r.Status, r.Body)
		}
		created[r.JSON()["id"].(string)] = i
		fake.Advance(time.Second)
	}

	// Three pages of 50, 50, 20, newest first, each naming the total. The
	// cursor is accepted as before, after and cursor.
	var seen []string
	query := "?limit=50"
	for page, param := range []string{"before", "after", "cursor"} {
		p := listSuppressions(t, a, a.Key, query)
		want := []int{50, 50, 20}[page]
		if len(p.Suppressions) != want || p.Total != 120 || p.HasMore != (page < 2) || (p.NextCursor == nil) != (page == 2) {
			t.Fatalf("page %d: %d rows, total %d, has_more %v, next %v", page, len(p.Suppressions), p.Total, p.HasMore, p.NextCursor)
		}
		for _, s := range p.Suppressions {
			seen = append(seen, s.ID)
		}
		if p.NextCursor != nil {
			query = "?limit=50&" + param + "=" + url.QueryEscape(*p.NextCursor)
		}
	}
	if len(seen) != 120 {
		t.Fatalf("saw %d rows", len(seen))
	}
	for i, id := range seen {
		if created[id] != 119-i {
			t.Fatalf("row %d is creation %d, want %d (newest first)", i, created[id], 119-i)
		}
	}

	// Default limit 50; a filter pages and counts on its own.
	p := listSuppressions(t, a, a.Key, "")
	if len(p.Suppressions) != 50 || !p.HasMore {
		t.Fatalf("default page: %d %v", len(p.Suppressions), p.HasMore)
	}
	p = listSuppressions(t, a, a.Key, "?reason=bounce&limit=50")
	if p.Total != 60 || len(p.Suppressions) != 50 || !p.HasMore {
		t.Fatalf("bounce page 1: %+v", p.Total)
	}
	p2 := listSuppressions(t, a, a.Key, "?reason=bounce&limit=50&before="+url.QueryEscape(*p.NextCursor))
	if p2.Total != 60 || len(p2.Suppressions) != 10 || p2.HasMore || p2.NextCursor != nil {
		t.Fatalf("bounce page 2: %d rows total %d", len(p2.Suppressions), p2.Total)
	}
	for _, s := range append(p.Suppressions, p2.Suppressions...) {
		if s.Reason != "bounce" {
			t.Fatalf("filter leaked %+v", s)
		}
	}

	// A tampered cursor is refused with 422 (flat).
	c := []byte(*p.NextCursor)
	c[2] ^= 1
	flatErr(t, a.Do("GET", "/v1/suppressions?before="+url.QueryEscape(string(c)), nil), 422, "invalid_cursor")

	// Rows created in the same millisecond still page without loss or
	// repeats (the id breaks the tie).
	for i := range 5 {
		if r := a.Do("POST", "/v1/suppressions", map[string]any{"email": fmt.Sprintf("tie%d@example.com", i), "reason": "unsub"}); r.Status != 201 {
			t.Fatalf("tie %d: %d", i, r.Status)
		}
	}
	got := map[string]bool{}
	query = "?reason=unsub&limit=2"
	for {
		p := listSuppressions(t, a, a.Key, query)
		if p.Total != 5 {
			t.Fatalf("tie total %d", p.Total)
		}
		for _, s := range p.Suppressions {
			if got[s.ID] {
				t.Fatalf("repeated %s", s.ID)
			}
			got[s.ID] = true
		}
		if p.NextCursor == nil {
			break
		}
		query = "?reason=unsub&limit=2&before=" + url.QueryEscape(*p.NextCursor)
	}
	if len(got) != 5 {
		t.Fatalf("tie rows seen: %d", len(got))
	}
}
