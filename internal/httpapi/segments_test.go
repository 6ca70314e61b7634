package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

func TestSegmentsRoutes(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a).WithOther()
	many := make([]any, 21)
	for i := range many {
		many[i] = map[string]any{"field": "tag", "op": "has", "value": fmt.Sprint("t", i)}
	}
	s.Run(t,
		sc{Name: "audience", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "News"}, Status: 201, Save: map[string]string{"aud": "id"}},
		sc{Name: "import", Method: "POST", Path: "/v1/audiences/{aud}/contacts", Body: []any{
			map[string]any{"email": "ann@acme.com", "first_name": "Ann", "tags": "vip", "attributes": map[string]any{"plan": "pro", "seats": "12"}},
			map[string]any{"email": "bob@acme.com", "attributes": map[string]any{"plan": "free", "seats": "9", "first_name": "Ann"}},
			map[string]any{"email": "cy@other.org", "tags": "vip", "attributes": map[string]any{"plan": "pro", "seats": "100"}},
			map[string]any{"email": "dee@acme.com", "tags": "vip", "subscribed": false},
		}, Status: 201},
		sc{Name: "suppress cy", Method: "POST", Path: "/v1/suppressions", Body: map[string]any{"email": "cy@other.org"}, Status: 201},
		sc{Name: "create", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "Acme VIPs", "audience_id": "{aud}",
			"rules": []any{map[string]any{"field": "email", "op": "ends_with", "value": "@acme.com"}, map[string]any{"field": "tag", "op": "has", "value": "vip"}}},
			Status: 201, Shape: shape{"id": scenario.Prefix("seg_"), "name": "Acme VIPs", "member_count": 2, "match": "all", "audience_id": scenario.Var("aud"),
				"describes": `Members of the audience whose email ends with "@acme.com" and who have the tag "vip".`},
			Save: map[string]string{"seg": "id"}},
		sc{Name: "numbers compare as numbers", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "Big", "audience_id": "{aud}",
			"rules": []any{map[string]any{"field": "attributes.seats", "op": "gt", "value": "10"}}},
			Status: 201, Shape: shape{"member_count": 2, "describes": `Members of the audience whose attribute "seats" is greater than "10".`},
			Save: map[string]string{"big": "id"}},
		sc{Name: "first name: the contact's, else the merge field", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "Anns", "audience_id": "{aud}",
			"rules": []any{map[string]any{"field": "first_name", "op": "eq", "value": "Ann"}}},
			Status: 201, Shape: shape{"member_count": 2, "describes": `Members of the audience whose first name is "Ann".`}},
		sc{Name: "SQL in values and names is data", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "Odd",
			"rules": []any{map[string]any{"field": "attributes.x'); DROP TABLE contacts;--", "op": "eq", "value": "' OR 1=1 --"}}},
			Status: 201, Shape: shape{"member_count": 0, "audience_id": nil}},
		sc{Name: "21 rules", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "Many", "rules": many}, Status: 400, Code: "invalid_request"},
		sc{Name: "nested", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "N", "rules": []any{map[string]any{"match": "any", "rules": []any{}}}},
			Status: 400, Code: "invalid_request", Check: messageHas("rules[0]")},
		sc{Name: "unknown op", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "N", "rules": []any{map[string]any{"field": "email", "op": "like", "value": "x"}}},
			Status: 400, Code: "invalid_request", Check: messageHas("rules[0]")},
		sc{Name: "wrong value type", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "N", "rules": []any{map[string]any{"field": "tag", "op": "has", "value": 3}}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "status needs an audience", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "N", "rules": []any{map[string]any{"field": "status", "op": "eq", "value": "subscribed"}}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "no name", Method: "POST", Path: "/v1/segments", Body: map[string]any{}, Status: 400, Code: "invalid_request"},
		sc{Name: "unknown audience", Method: "POST", Path: "/v1/segments", Body: map[string]any{"name": "N", "audience_id": "aud_nope"}, Status: 404, Code: "not_found"},
		sc{Name: "list", Method: "GET", Path: "/v1/segments?audience_id={aud}", Status: 200, Shape: shape{"segments": scenario.Len(3)}},
		sc{Name: "get", Method: "GET", Path: "/v1/segments/{seg}", Status: 200, Shape: shape{"member_count": 2, "rules": scenario.Len(2)}},
		sc{Name: "get from another workspace", Method: "GET", Path: "/v1/segments/{seg}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "members", Method: "GET", Path: "/v1/segments/{seg}/members?limit=1", Status: 200,
			Shape: shape{"segment_id": scenario.Var("seg"), "total": 2, "members": scenario.Len(1),
				"has_more": true, "next_cursor": scenario.Present, "next_after": scenario.Present},
			Save: map[string]string{"next": "next_after"}},
		sc{Name: "members page two", Method: "GET", Path: "/v1/segments/{seg}/members?limit=1&after={next}", Status: 200,
			Shape: shape{"members": scenario.Len(1), "has_more": false, "next_cursor": nil}},
		sc{Name: "mailable members", Method: "GET", Path: "/v1/segments/{seg}/members?mailable=true", Status: 200,
			Shape: shape{"total": 1, "members": []any{shape{"email": "ann@acme.com"}}}},
		sc{Name: "mailable leaves out the suppressed", Method: "GET", Path: "/v1/segments/{big}/members?mailable=true", Status: 200,
			Shape: shape{"total": 1, "members": []any{shape{"email": "ann@acme.com", "status": "subscribed", "attributes": shape{"plan": "pro"}}}}},
		sc{Name: "bad cursor", Method: "GET", Path: "/v1/segments/{seg}/members?after=xyz", Status: 422, Code: "invalid_cursor"},
		sc{Name: "limit over 1000", Method: "GET", Path: "/v1/segments/{seg}/members?limit=1001", Status: 422, Code: "invalid_limit"},
		sc{Name: "patch replaces rules", Method: "PATCH", Path: "/v1/segments/{seg}", Body: map[string]any{"match": "any",
			"rules": []any{map[string]any{"field": "status", "op": "eq", "value": "unsubscribed"}}},
			Status: 200, Shape: shape{"member_count": 1, "match": "any", "rules": scenario.Len(1)}},
		sc{Name: "new contact joins", Method: "POST", Path: "/v1/audiences/{aud}/contacts", Body: []any{map[string]any{"email": "eve@acme.com", "subscribed": false}}, Status: 201},
		sc{Name: "cached count", Method: "GET", Path: "/v1/segments/{seg}", Status: 200, Shape: shape{"member_count": 1}},
		sc{Name: "live count", Method: "GET", Path: "/v1/segments/{seg}?count=live", Status: 200, Shape: shape{"member_count": 2}},
		sc{Name: "count is cached", Method: "GET", Path: "/v1/segments/{seg}", Status: 200, Shape: shape{"member_count": 2}},
		sc{Name: "delete", Method: "DELETE", Path: "/v1/segments/{seg}", Status: 200, Shape: shape{"id": scenario.Var("seg"), "deleted": true}},
		sc{Name: "gone", Method: "GET", Path: "/v1/segments/{seg}/members", Status: 404, Code: "not_found"},
		sc{Name: "contacts untouched", Method: "GET", Path: "/v1/audiences/{aud}/contacts", Status: 200, Shape: shape{"contact_count": 5}},
	)
}

func messageHas(s string) func(t testing.TB, r *testapp.Response) {
	return func(t testing.TB, r *testapp.Response) {
		e, _ := r.JSON()["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.Contains(msg, s) {
			t.Errorf("message %q does not name %q", msg, s)
		}
	}
}

// TestContactInASegment: the Resend SDKs' contacts.create{audienceId} posts
// to /v1/audiences/{segment id}/contacts. A rule-less segment of an
// audience takes the contact and its membership there; a segment with
// rules refuses (422 segment_has_rules); another workspace's segment is 404.
func TestContactInASegment(t *testing.T) {
	a := testapp.Start(t)
	aud := a.Do("POST", "/v1/audiences", map[string]any{"name": "News"}).JSON()["id"].(string)
	plain := a.Do("POST", "/v1/segments", map[string]any{"name": "all of news", "audience_id": aud}).JSON()["id"].(string)
	ruled := a.Do("POST", "/v1/segments", map[string]any{"name": "vip", "rules": []any{map[string]any{"field": "tag", "op": "has", "value": "vip"}}}).JSON()["id"].(string)
	r := a.Do("POST", "/v1/audiences/"+plain+"/contacts", map[string]any{"email": "ann@example.com", "first_name": "Ann"})
	if r.Status != 201 || r.JSON()["id"] == nil || r.JSON()["email"] != "ann@example.com" {
		t.Fatalf("rule-less segment: %d %s", r.Status, r.Body)
	}
	if m := a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil); !strings.Contains(string(m.Body), "ann@example.com") {
		t.Fatalf("no membership in the segment's audience: %s", m.Body)
	}
	if r := a.Do("POST", "/v1/audiences/"+ruled+"/contacts", map[string]any{"email": "bo@example.com"}); r.Status != 422 || r.ErrCode() != "segment_has_rules" {
		t.Fatalf("segment with rules: %d %s", r.Status, r.Body)
	}
	_, other := a.NewWorkspace("Other", "other@example.com")
	if r := a.DoKey(other, "POST", "/v1/audiences/"+plain+"/contacts", map[string]any{"email": "cy@example.com"}); r.Status != 404 {
		t.Fatalf("another workspace's segment: %d %s", r.Status, r.Body)
	}
}
