package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

func TestContactsRoutes(t *testing.T) {
	a := testapp.Start(t)
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	s := scenario.New(a)
	s.Errors = scenario.Flat // the collection and item routes; tags and attributes are nested
	s.Set("other", otherKey)
	long := strings.Repeat("x", 65)
	s.Run(t,
		sc{Name: "create", Method: "POST", Path: "/v1/contacts",
			Body: map[string]any{"email": "Ann <Ann@Example.COM>", "first_name": "Ann", "last_name": "Lee",
				"attributes": map[string]any{"plan": "pro"}, "tags": []any{"VIP", "vip", "trial"}},
			Status: 201, Shape: shape{"id": scenario.Prefix("ct_"), "email": "ann@example.com", "first_name": "Ann", "last_name": "Lee",
				"tags": []any{"trial", "vip"}, "attributes": shape{"plan": "pro"}},
			Save: map[string]string{"ann": "id"}},
		sc{Name: "create bob", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"email": "bob@example.org", "first_name": "Robert"},
			Status: 201, Shape: shape{"tags": []any{}, "attributes": shape{}, "last_name": ""}, Save: map[string]string{"bob": "id"}},
		sc{Name: "taken address", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"email": "ANN@example.com"},
			Status: 409, Code: "contact_exists"},
		sc{Name: "no email", Method: "POST", Path: "/v1/contacts", Body: `{}`, Status: 400, Code: "invalid_request"},
		sc{Name: "address with CR/LF", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"email": "x@example.com\r\nBcc: y@example.com"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "tag with a comma", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"email": "c@example.com", "tags": []any{"a,b"}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "tag of 65 characters", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"email": "c@example.com", "tags": []any{long}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "empty attribute name", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"email": "c@example.com", "attributes": map[string]any{"": "v"}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "attribute name of 1000 characters", Method: "POST", Path: "/v1/contacts",
			Body:   map[string]any{"email": "c@example.com", "attributes": map[string]any{strings.Repeat("n", 1000): "v"}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "unknown field", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"email": "c@example.com", "age": 3}, Status: 400, Code: "invalid_request"},
		sc{Name: "nothing half-written", Method: "GET", Path: "/v1/contacts?lookup=c@example.com", Status: 200, Shape: shape{"contacts": scenario.Len(0)}},

		sc{Name: "list", Method: "GET", Path: "/v1/contacts", Status: 200,
			Shape: shape{"contacts": []any{shape{"id": scenario.Var("bob")}, shape{"id": scenario.Var("ann")}}, "has_more": false, "next_cursor": nil}},
		sc{Name: "q over the address", Method: "GET", Path: "/v1/contacts?q=EXAMPLE.org", Status: 200,
			Shape: shape{"contacts": []any{shape{"id": scenario.Var("bob")}}}},
		sc{Name: "q over the names", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape("ann lee"), Status: 200,
			Shape: shape{"contacts": []any{shape{"id": scenario.Var("ann")}}}},
		sc{Name: "q with a wildcard is literal", Method: "GET", Path: "/v1/contacts?q=%25", Status: 200, Shape: shape{"contacts": scenario.Len(0)}},
		sc{Name: "q with an underscore", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape("_"), Status: 200, Shape: shape{"contacts": scenario.Len(0)}},
		sc{Name: "q with FTS operators", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape("ann\" OR \"bob*"), Status: 200, Shape: shape{"contacts": scenario.Len(0)}},
		sc{Name: "q with a quote", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape("'"), Status: 200, Shape: shape{"contacts": scenario.Len(0)}},
		sc{Name: "q of three characters, indexed", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape("lee"), Status: 200, Shape: shape{"contacts": scenario.Len(1)}},
		sc{Name: "q with a backslash", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape("\\"), Status: 200, Shape: shape{"contacts": scenario.Len(0)}},
		sc{Name: "q of one character", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape("b"), Status: 200, Shape: shape{"contacts": scenario.Len(1)}},
		sc{Name: "q across address and names", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape("com ann"), Status: 200, Shape: shape{"contacts": scenario.Len(1)}},
		sc{Name: "q of 256 characters", Method: "GET", Path: "/v1/contacts?q=" + url.QueryEscape(strings.Repeat("x", 256)), Status: 200, Shape: shape{"contacts": scenario.Len(0)}},
		sc{Name: "q of 257 characters", Method: "GET", Path: "/v1/contacts?q=" + strings.Repeat("x", 257), Status: 400, Code: "invalid_request"},
		sc{Name: "q not UTF-8", Method: "GET", Path: "/v1/contacts?q=ab%FFcd", Status: 400, Code: "invalid_request"},
		sc{Name: "q with a NUL", Method: "GET", Path: "/v1/contacts?q=ab%00cd", Status: 400, Code: "invalid_request"},
		sc{Name: "lookup", Method: "GET", Path: "/v1/contacts?lookup=" + url.QueryEscape("Bob@Example.org"), Status: 200,
			Shape: shape{"contacts": []any{shape{"id": scenario.Var("bob")}}}},
		sc{Name: "bad cursor", Method: "GET", Path: "/v1/contacts?cursor=nope", Status: 422, Code: "invalid_cursor"},
		sc{Name: "get", Method: "GET", Path: "/v1/contacts/{ann}", Status: 200, Shape: shape{"email": "ann@example.com"}},
		sc{Name: "get from another workspace", Method: "GET", Path: "/v1/contacts/{ann}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "patch", Method: "PATCH", Path: "/v1/contacts/{bob}",
			Body:   map[string]any{"last_name": "Stone", "attributes": map[string]any{"city": "Oslo", "nope": nil}},
			Status: 200, Shape: shape{"first_name": "Robert", "last_name": "Stone", "attributes": shape{"city": "Oslo"}}},
		sc{Name: "patch to a taken address", Method: "PATCH", Path: "/v1/contacts/{bob}", Body: map[string]any{"email": "ann@example.com"},
			Status: 409, Code: "contact_exists"},
		sc{Name: "patch from another workspace", Method: "PATCH", Path: "/v1/contacts/{bob}", Key: "{other}", Body: map[string]any{"last_name": "X"},
			Status: 404, Code: "not_found"},

		// Tags and attributes answer nested errors.
		sc{Name: "tags", Method: "GET", Path: "/v1/contacts/{ann}/tags", Status: 200, Shape: shape{"tags": []any{"trial", "vip"}, "added": []any{}}},
		sc{Name: "add tags", Method: "POST", Path: "/v1/contacts/{ann}/tags", Body: map[string]any{"tags": []any{"Beta", "vip"}},
			Status: 200, Shape: shape{"tags": []any{"beta", "trial", "vip"}, "added": []any{"beta"}}},
		sc{Name: "add one tag again", Method: "POST", Path: "/v1/contacts/{ann}/tags", Body: map[string]any{"tag": "BETA"},
			Status: 200, Shape: shape{"added": []any{}}},
		sc{Name: "tag too long", Method: "POST", Path: "/v1/contacts/{ann}/tags", Body: map[string]any{"tag": long},
			Status: 400, Code: "invalid_request", Errors: scenario.Nested},
		sc{Name: "tag with a newline", Method: "POST", Path: "/v1/contacts/{ann}/tags", Body: map[string]any{"tag": "a\nb"},
			Status: 400, Code: "invalid_request", Errors: scenario.Nested},
		sc{Name: "no tags", Method: "POST", Path: "/v1/contacts/{ann}/tags", Body: `{}`, Status: 400, Code: "invalid_request", Errors: scenario.Nested},
		sc{Name: "tags of another workspace", Method: "POST", Path: "/v1/contacts/{ann}/tags", Key: "{other}", Body: map[string]any{"tag": "x"},
			Status: 404, Code: "not_found", Errors: scenario.Nested},
		sc{Name: "remove tag", Method: "DELETE", Path: "/v1/contacts/{ann}/tags?tag=Trial", Status: 200,
			Shape: shape{"tags": []any{"beta", "vip"}, "removed": []any{"trial"}}},
		sc{Name: "remove it again", Method: "DELETE", Path: "/v1/contacts/{ann}/tags?tag=trial", Status: 200,
			Shape: shape{"tags": []any{"beta", "vip"}, "removed": scenario.Absent}},
		sc{Name: "remove without a tag", Method: "DELETE", Path: "/v1/contacts/{ann}/tags", Status: 400, Code: "invalid_request", Errors: scenario.Nested},

		sc{Name: "attributes", Method: "GET", Path: "/v1/contacts/{ann}/attributes", Status: 200, Shape: shape{"attributes": shape{"plan": "pro"}, "changed": []any{}}},
		sc{Name: "patch attributes", Method: "PATCH", Path: "/v1/contacts/{ann}/attributes", Body: map[string]any{"plan": nil, "city": "Rome", "ghost": nil},
			Status: 200, Shape: shape{"attributes": scenario.All(shape{"city": "Rome"}, scenario.Keys("city")), "changed": []any{"city", "plan"}}},
		sc{Name: "patch attributes unchanged", Method: "PATCH", Path: "/v1/contacts/{ann}/attributes", Body: map[string]any{"city": "Rome"},
			Status: 200, Shape: shape{"changed": []any{}}},
		sc{Name: "no attributes", Method: "PATCH", Path: "/v1/contacts/{ann}/attributes", Body: `{}`, Status: 400, Code: "invalid_request", Errors: scenario.Nested},
		sc{Name: "attribute of a number", Method: "PATCH", Path: "/v1/contacts/{ann}/attributes", Body: `{"n": 3}`, Status: 400, Code: "invalid_request", Errors: scenario.Nested},
		sc{Name: "attributes of another workspace", Method: "GET", Path: "/v1/contacts/{ann}/attributes", Key: "{other}", Status: 404, Code: "not_found", Errors: scenario.Nested},

		sc{Name: "delete from another workspace", Method: "DELETE", Path: "/v1/contacts/{bob}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "delete", Method: "DELETE", Path: "/v1/contacts/{bob}", Status: 200, Shape: shape{"id": scenario.Var("bob"), "deleted": true}},
		sc{Name: "delete again", Method: "DELETE", Path: "/v1/contacts/{bob}", Status: 404, Code: "not_found"},
		sc{Name: "unknown route", Method: "PUT", Path: "/v1/contacts/{ann}", Status: 404, Code: "not_found"},
	)

	// The creation and every real tag change, and only those, queued one
	// durable event each.
	events, err := contacts.New(a.DB, clock.Real{}).AutomationEvents(context.Background(), a.WorkspaceID, s.Get("ann"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Kind+" "+fmt.Sprint(e.Data["tag"]))
	}
	want := "contact.created <nil>,tag.added trial,tag.added vip,tag.added beta,tag.removed trial"
	if strings.Join(got, ",") != want {
		t.Fatalf("automation events %q, want %q", strings.Join(got, ","), want)
	}
}

// TestContactsPagination walks a listing page by page: every contact once,
// newest first, has_more false only on the last page.
func TestContactsPagination(t *testing.T) {
	a := testapp.Start(t)
	const n = 7
	for i := range n {
		r := a.Do("POST", "/v1/contacts", map[string]any{"email": fmt.Sprintf("p%d@example.com", i)})
		if r.Status != 201 {
			t.Fatalf("create %d: %d %s", i, r.Status, r.Body)
		}
	}
	seen := map[string]bool{}
	path := "/v1/contacts?limit=3"
	pages := 0
	for {
		var p struct {
			Contacts []struct {
				ID string `json:"id"`
			} `json:"contacts"`
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		}
		r := a.Do("GET", path, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		r.Decode(t, &p)
		pages++
		for _, c := range p.Contacts {
			if seen[c.ID] {
				t.Fatalf("contact %s twice", c.ID)
			}
			seen[c.ID] = true
		}
		if !p.HasMore {
			if p.NextCursor != nil {
				t.Fatal("next_cursor set on the last page")
			}
			break
		}
		path = "/v1/contacts?limit=3&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	if len(seen) != n || pages != 3 {
		t.Fatalf("saw %d contacts over %d pages, want %d over 3", len(seen), pages, n)
	}
}
