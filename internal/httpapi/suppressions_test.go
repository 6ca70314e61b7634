package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/scenario"
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
	s := scenario.New(a)
	s.Errors = scenario.Flat
	post := func(name string, body any, status int, code string) sc {
		return sc{Name: name, Method: "POST", Path: "/v1/suppressions", Body: body, Status: status, Code: code}
	}
	list := func(query string, n int) sc {
		return sc{Name: "list " + query, Method: "GET", Path: "/v1/suppressions" + query, Status: 200,
			Shape: shape{"total": n, "suppressions": scenario.Len(n)}}
	}
	del := func(path string, status int, code string) sc {
		return sc{Name: "delete " + path, Method: "DELETE", Path: path, Status: status, Code: code}
	}
	// The whole row, as created: normalized address, default reason.
	ann := shape{"id": scenario.Var("ann"), "email": "ann@example.com", "reason": "manual", "is_global": false,
		"created_at": scenario.Var("annCreated"), "source_email_id": nil}

	s.Run(t,
		sc{Name: "create", Method: "POST", Path: "/v1/suppressions", Body: map[string]any{"email": "Ann <Ann@Example.COM>"},
			Status: 201, Shape: shape{"id": scenario.Prefix("sup_"), "email": "ann@example.com", "reason": "manual",
				"is_global": false, "source_email_id": nil},
			Save: map[string]string{"ann": "id", "annCreated": "created_at"}},
		// Again: 200 with the existing row unchanged (first reason wins).
		sc{Name: "create again", Method: "POST", Path: "/v1/suppressions", Body: map[string]any{"email": "ANN@example.com", "reason": "bounce"},
			Status: 200, Shape: ann},
		sc{Name: "create with a reason", Method: "POST", Path: "/v1/suppressions", Body: map[string]any{"email": "bob@example.com", "reason": "complaint"},
			Status: 201, Shape: shape{"reason": "complaint"}, Save: map[string]string{"bob": "id"}},

		// IDN domains are stored in punycode; a filter in either form finds them.
		sc{Name: "create IDN", Method: "POST", Path: "/v1/suppressions", Body: map[string]any{"email": "kim@Bücher.example", "reason": "unsub"},
			Status: 201, Shape: shape{"email": "kim@xn--bcher-kva.example"}, Save: map[string]string{"kim": "id"}},
		sc{Name: "filter IDN as unicode", Method: "GET", Path: "/v1/suppressions?email=" + url.QueryEscape("kim@bücher.example"),
			Status: 200, Shape: shape{"total": 1, "suppressions": []any{shape{"id": scenario.Var("kim")}}}},
		sc{Name: "filter IDN as punycode", Method: "GET", Path: "/v1/suppressions?email=" + url.QueryEscape("KIM@xn--bcher-kva.example"),
			Status: 200, Shape: shape{"total": 1, "suppressions": []any{shape{"id": scenario.Var("kim")}}}},
		sc{Name: "delete IDN by unicode address", Method: "DELETE", Path: "/v1/suppressions?email=" + url.QueryEscape("kim@bücher.example"),
			Status: 200, Shape: shape{"deleted": scenario.Var("kim")}},

		// Bad bodies, all flat.
		post("truncated JSON", `{"email": "x@example.com"`, 400, "invalid_json"),
		post("empty body", ``, 400, "invalid_json"),
		post("array", `[]`, 400, "invalid_request"),
		post("no email", `{}`, 400, "invalid_request"),
		post("empty email", map[string]any{"email": ""}, 400, "invalid_request"),
		post("email a number", map[string]any{"email": 5}, 400, "invalid_request"),
		post("not an address", map[string]any{"email": "not-an-address"}, 400, "invalid_request"),
		post("header injection", map[string]any{"email": "a@example.com\r\nBcc: b@example.com"}, 400, "invalid_request"),
		post("unknown reason", map[string]any{"email": "a@example.com", "reason": "spam"}, 400, "invalid_request"),
		post("reason a number", map[string]any{"email": "a@example.com", "reason": 1}, 400, "invalid_request"),
		post("is_global from a workspace", map[string]any{"email": "a@example.com", "is_global": true}, 400, "invalid_request"),
	)

	// A global row (operator command) is listed with is_global and applies
	// here, but cannot be deleted by the workspace.
	globalID, _, err := suppressions.AddGlobal(context.Background(), a.App.DB, "Everyone@Example.com", suppressions.ReasonComplaint, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Set("global", globalID)
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	s.Set("other", otherKey)
	r := a.Do("POST", "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}})
	s.Set("sendOnly", r.JSON()["key"].(string))
	onlyAnnBobGlobal := func(t testing.TB, r *testapp.Response) {
		for _, row := range r.JSON()["suppressions"].([]any) {
			m := row.(map[string]any)
			if m["is_global"] != (m["id"] == globalID) {
				t.Fatalf("is_global wrong on %v", m)
			}
		}
	}

	s.Run(t,
		sc{Name: "list", Method: "GET", Path: "/v1/suppressions", Status: 200,
			Shape: shape{"total": 3, "suppressions": scenario.Len(3), "has_more": false, "next_cursor": nil}, Check: onlyAnnBobGlobal},
		sc{Name: "the global row", Method: "GET", Path: "/v1/suppressions?email=everyone@example.com", Status: 200,
			Shape: shape{"suppressions": []any{shape{"id": scenario.Var("global"), "is_global": true, "email": "everyone@example.com"}}}},
		del("/v1/suppressions/{global}", 404, "not_found"),
		del("/v1/suppressions?id={global}", 404, "not_found"),
		sc{Name: "delete the global row by address", Method: "DELETE", Path: "/v1/suppressions?email=everyone@example.com",
			Status: 404, Code: "not_found", Shape: shape{"hint": scenario.Prefix("")}},

		// Filters.
		list("?reason=complaint", 2),
		list("?reason=manual", 1),
		list("?reason=unsub", 0),
		list("?email="+url.QueryEscape("ANN@example.com"), 1),
		list("?email=everyone@example.com", 1),
		list("?email=nobody@example.com", 0),
		list("?email=bob@example.com&reason=manual", 0),
		list("?email=bob@example.com&reason=complaint", 1),
		sc{Name: "unknown reason filter", Method: "GET", Path: "/v1/suppressions?reason=spam", Status: 400, Code: "invalid_request"},
		sc{Name: "empty reason filter", Method: "GET", Path: "/v1/suppressions?reason=", Status: 400, Code: "invalid_request"},
		sc{Name: "limit 0", Method: "GET", Path: "/v1/suppressions?limit=0", Status: 422, Code: "invalid_limit"},
		sc{Name: "limit 201", Method: "GET", Path: "/v1/suppressions?limit=201", Status: 422, Code: "invalid_limit"},
		sc{Name: "limit -1", Method: "GET", Path: "/v1/suppressions?limit=-1", Status: 422, Code: "invalid_limit"},
		sc{Name: "limit ten", Method: "GET", Path: "/v1/suppressions?limit=ten", Status: 422, Code: "invalid_limit"},
		sc{Name: "garbage cursor", Method: "GET", Path: "/v1/suppressions?before=garbage", Status: 422, Code: "invalid_cursor"},

		// Another workspace sees its own rows and the global one, never
		// ours, and our ids answer 404 to it (and its ids to us).
		sc{Name: "other workspace creates the same address", Method: "POST", Path: "/v1/suppressions", Key: "{other}",
			Body:   map[string]any{"email": "ann@example.com", "reason": "unsub"},
			Status: 201, Shape: shape{"id": scenario.NotVar("ann"), "reason": "unsub"}, Save: map[string]string{"theirs": "id"}},
		sc{Name: "other workspace lists", Method: "GET", Path: "/v1/suppressions", Key: "{other}", Status: 200,
			Shape: shape{"total": 2, "suppressions": scenario.Len(2)}},
		sc{Name: "other workspace deletes ours", Method: "DELETE", Path: "/v1/suppressions/{bob}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "other workspace deletes ours by address", Method: "DELETE", Path: "/v1/suppressions?email=bob@example.com", Key: "{other}",
			Status: 404, Code: "not_found"},
		del("/v1/suppressions/{theirs}", 404, "not_found"),

		// Delete by id, by email (either spelling), and the ?id= form.
		sc{Name: "delete by id", Method: "DELETE", Path: "/v1/suppressions/{ann}", Status: 200, Shape: shape{"deleted": scenario.Var("ann")}},
		del("/v1/suppressions/{ann}", 404, "not_found"),
		sc{Name: "delete by address", Method: "DELETE", Path: "/v1/suppressions?email=" + url.QueryEscape("Bob@EXAMPLE.com"),
			Status: 200, Shape: shape{"deleted": scenario.Var("bob")}},
		del("/v1/suppressions?email=bob@example.com", 404, "not_found"),
		sc{Name: "create carl", Method: "POST", Path: "/v1/suppressions", Body: map[string]any{"email": "carl@example.com", "reason": "unsub"},
			Status: 201, Save: map[string]string{"carl": "id"}},
		sc{Name: "delete ?id=", Method: "DELETE", Path: "/v1/suppressions?id={carl}", Status: 200, Shape: shape{"deleted": scenario.Var("carl")}},
		del("/v1/suppressions", 400, "invalid_request"),
		del("/v1/suppressions?id=x&email=y@example.com", 400, "invalid_request"),
		sc{Name: "only the global row is left", Method: "GET", Path: "/v1/suppressions", Status: 200,
			Shape: shape{"total": 1, "suppressions": []any{shape{"id": scenario.Var("global")}}}},
		sc{Name: "the other workspace's row for the same address is untouched", Method: "GET", Path: "/v1/suppressions?email=ann@example.com",
			Key: "{other}", Status: 200, Shape: shape{"total": 1, "suppressions": []any{shape{"id": scenario.Var("theirs")}}}},

		// Scope and auth errors on these routes are flat too.
		sc{Name: "send-only key lists", Method: "GET", Path: "/v1/suppressions", Key: "{sendOnly}", Status: 403, Code: "insufficient_scope"},
		sc{Name: "send-only key creates", Method: "POST", Path: "/v1/suppressions", Key: "{sendOnly}",
			Body: map[string]any{"email": "z@example.com"}, Status: 403, Code: "insufficient_scope"},
		sc{Name: "no key", Method: "GET", Path: "/v1/suppressions", Key: scenario.NoKey, Status: 401, Code: "unauthorized"},
	)
}

func TestSuppressionsPagination(t *testing.T) {
	fake := clock.NewFake(time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC))
	a := testapp.Start(t, testapp.WithClock(fake))
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
	s := scenario.New(a)
	s.Errors = scenario.Flat
	s.Do(t, sc{Method: "GET", Path: "/v1/suppressions?before=" + url.QueryEscape(string(c)), Status: 422, Code: "invalid_cursor"})

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
