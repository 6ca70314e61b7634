package httpapi_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

func TestAudiencesRoutes(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a).WithOther()
	s.Run(t,
		sc{Name: "create", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": " Newsletter ", "description": "Monthly"},
			Status: 201, Shape: shape{"id": scenario.Prefix("aud_"), "name": "Newsletter", "description": "Monthly",
				"require_double_opt_in": false, "double_opt_in_source": "workspace", "confirmation_subject": nil, "confirmation_body": nil},
			Save: map[string]string{"news": "id"}},
		sc{Name: "name taken", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "Newsletter"}, Status: 409, Code: "audience_exists"},
		sc{Name: "no name", Method: "POST", Path: "/v1/audiences", Body: `{}`, Status: 400, Code: "invalid_request"},
		sc{Name: "blank name", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "  "}, Status: 400, Code: "invalid_request"},
		sc{Name: "other workspace may take the name", Method: "POST", Path: "/v1/audiences", Key: "{other}", Body: map[string]any{"name": "Newsletter"},
			Status: 201},
		sc{Name: "create second", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "Events"}, Status: 201, Save: map[string]string{"events": "id"}},
		sc{Name: "list", Method: "GET", Path: "/v1/audiences", Status: 200,
			Shape: shape{"audiences": []any{
				scenario.All(shape{"id": scenario.Var("news"), "name": "Newsletter"}, scenario.Keys("id", "name", "description", "created_at")),
				shape{"id": scenario.Var("events")}}, "has_more": false, "next_cursor": nil}},
		sc{Name: "get", Method: "GET", Path: "/v1/audiences/{news}", Status: 200, Shape: shape{"require_double_opt_in": false, "double_opt_in_source": "workspace"}},
		sc{Name: "get from another workspace", Method: "GET", Path: "/v1/audiences/{news}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "require double opt-in", Method: "PATCH", Path: "/v1/audiences/{news}",
			Body:   map[string]any{"require_double_opt_in": true, "confirmation_subject": "Confirm {{ audience_name }}", "confirmation_body": "Click {{ confirm_url }} within {{ ttl_days }} days"},
			Status: 200, Shape: shape{"require_double_opt_in": true, "double_opt_in_source": "audience", "confirmation_subject": "Confirm {{ audience_name }}", "name": "Newsletter"}},
		sc{Name: "body without the link", Method: "PATCH", Path: "/v1/audiences/{news}", Body: map[string]any{"confirmation_body": "Hello"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "subject on two lines", Method: "PATCH", Path: "/v1/audiences/{news}", Body: map[string]any{"confirmation_subject": "a\r\nb"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "rename to a taken name", Method: "PATCH", Path: "/v1/audiences/{events}", Body: map[string]any{"name": "Newsletter"},
			Status: 409, Code: "audience_exists"},
		sc{Name: "wrong type", Method: "PATCH", Path: "/v1/audiences/{events}", Body: map[string]any{"require_double_opt_in": "yes"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "back to the workspace default", Method: "PATCH", Path: "/v1/audiences/{news}", Body: map[string]any{"require_double_opt_in": nil, "confirmation_body": nil},
			Status: 200, Shape: shape{"require_double_opt_in": false, "double_opt_in_source": "workspace", "confirmation_body": nil,
				"confirmation_subject": "Confirm {{ audience_name }}"}},
		sc{Name: "patch from another workspace", Method: "PATCH", Path: "/v1/audiences/{news}", Key: "{other}", Body: map[string]any{"name": "X"},
			Status: 404, Code: "not_found"},
		sc{Name: "delete from another workspace", Method: "DELETE", Path: "/v1/audiences/{events}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "delete", Method: "DELETE", Path: "/v1/audiences/{events}", Status: 200, Shape: shape{"id": scenario.Var("events"), "deleted": true}},
		sc{Name: "deleted is gone", Method: "GET", Path: "/v1/audiences/{events}", Status: 404, Code: "not_found"},
		sc{Name: "its members are gone", Method: "GET", Path: "/v1/audiences/{events}/contacts", Status: 404, Code: "not_found"},
		sc{Name: "delete again", Method: "DELETE", Path: "/v1/audiences/{events}", Status: 404, Code: "not_found"},
		sc{Name: "name free again", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "Events"}, Status: 201},
	)
}

func TestMembersAndImport(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a).WithOther()
	s.Run(t,
		sc{Name: "audience", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "News"}, Status: 201, Save: map[string]string{"aud": "id"}},
		sc{Name: "suppress one address", Method: "POST", Path: "/v1/suppressions", Body: map[string]any{"email": "gone@example.com"}, Status: 201},
		sc{Name: "existing contact", Method: "POST", Path: "/v1/contacts", Body: map[string]any{"email": "ann@example.com", "tags": []any{"old"}},
			Status: 201, Save: map[string]string{"ann": "id"}},
		sc{Name: "dry run", Method: "POST", Path: "/v1/audiences/{aud}/contacts?dry_run=true",
			Body:   []any{map[string]any{"email": "ann@example.com", "tags": "a, b"}, map[string]any{"email": "bob@example.com"}},
			Status: 200, Shape: shape{"dry_run": true, "created": 2, "tags_added": 2, "imported": 2}},
		sc{Name: "dry run wrote nothing", Method: "GET", Path: "/v1/audiences/{aud}/contacts", Status: 200,
			Shape: shape{"contact_count": 0, "contacts": scenario.Len(0)}},
		sc{Name: "dry run in the envelope", Method: "POST", Path: "/v1/audiences/{aud}/contacts",
			Body: map[string]any{"dry_run": true, "contacts": []any{map[string]any{"email": "bob@example.com"}}}, Status: 200, Shape: shape{"created": 1}},
		sc{Name: "import JSON", Method: "POST", Path: "/v1/audiences/{aud}/contacts",
			Body: map[string]any{"contacts": []any{
				map[string]any{"email": "Ann@Example.com", "tags": []any{"a", "OLD"}, "attributes": map[string]any{"plan": "pro"}},
				map[string]any{"email_address": "bob@example.com", "first_name": "Bob", "status": "pending"},
				map[string]any{"email": "ann@example.com"},
				map[string]any{"email": "gone@example.com"},
				map[string]any{"email": "not an address"},
				map[string]any{"email": "cy@example.com", "status": "nope"},
				map[string]any{"email": "dee@example.com", "subscribed": false, "status": "subscribed"},
			}},
			Status: 201, Shape: shape{"dry_run": false, "created": 3, "updated": 0, "unchanged": 0, "duplicates": 1, "tags_added": 1,
				"imported": 3, "held_back": 1, "skipped": 2,
				"held":   []any{shape{"row": 4, "email": "gone@example.com", "status": "cleaned", "reason": "suppressed"}},
				"errors": []any{shape{"row": 5, "reason": scenario.Present}, shape{"row": 6, "email": "cy@example.com"}}}},
		sc{Name: "members", Method: "GET", Path: "/v1/audiences/{aud}/contacts", Status: 200,
			Shape: shape{"contact_count": 4, "subscribed_count": 1, "contacts": scenario.Len(4), "has_more": false, "next_cursor": nil, "next_after": nil}},
		sc{Name: "filter by status", Method: "GET", Path: "/v1/audiences/{aud}/contacts?status=pending", Status: 200,
			Shape: shape{"contacts": []any{shape{"email": "bob@example.com", "status": "pending", "attributes": shape{"first_name": "Bob"},
				"id": scenario.Prefix("mem_"), "contact_id": scenario.Prefix("ct_")}}},
			Save: map[string]string{"bob": "contacts.0.id"}},
		sc{Name: "subscribed wins over status", Method: "GET", Path: "/v1/audiences/{aud}/contacts?status=unsubscribed", Status: 200,
			Shape: shape{"contacts": []any{shape{"email": "dee@example.com"}}}, Save: map[string]string{"dee": "contacts.0.id"}},
		sc{Name: "bad status filter", Method: "GET", Path: "/v1/audiences/{aud}/contacts?status=gone", Status: 400, Code: "invalid_request"},
		sc{Name: "offset", Method: "GET", Path: "/v1/audiences/{aud}/contacts?offset=3", Status: 200, Shape: shape{"contacts": scenario.Len(1)}},
		sc{Name: "offset too far", Method: "GET", Path: "/v1/audiences/{aud}/contacts?offset=10001", Status: 422, Code: "offset_too_large"},
		sc{Name: "limit too large", Method: "GET", Path: "/v1/audiences/{aud}/contacts?limit=1001", Status: 422, Code: "invalid_limit"},
		sc{Name: "the contact gained its tag", Method: "GET", Path: "/v1/contacts/{ann}/tags", Status: 200, Shape: shape{"tags": []any{"a", "old"}}},
		sc{Name: "get member", Method: "GET", Path: "/v1/audiences/{aud}/contacts/{bob}", Status: 200, Shape: shape{"id": scenario.Var("bob"), "status": "pending"}},
		sc{Name: "member from another workspace", Method: "GET", Path: "/v1/audiences/{aud}/contacts/{bob}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "patch member", Method: "PATCH", Path: "/v1/audiences/{aud}/contacts/{bob}",
			Body:   map[string]any{"subscribed": true, "status": "cleaned", "attributes": map[string]any{"first_name": nil, "city": "Oslo"}},
			Status: 200, Shape: shape{"status": "subscribed", "attributes": scenario.All(shape{"city": "Oslo"}, scenario.Keys("city"))}},
		sc{Name: "patch member status", Method: "PATCH", Path: "/v1/audiences/{aud}/contacts/{bob}", Body: map[string]any{"status": "unsubscribed"},
			Status: 200, Shape: shape{"status": "unsubscribed"}},
		sc{Name: "patch member bad status", Method: "PATCH", Path: "/v1/audiences/{aud}/contacts/{bob}", Body: map[string]any{"status": "gone"},
			Status: 400, Code: "invalid_request"},

		// A later import cannot undo an unsubscribe, and repeats count as unchanged.
		sc{Name: "import again", Method: "POST", Path: "/v1/audiences/{aud}/contacts",
			Body: []any{map[string]any{"email": "bob@example.com", "status": "subscribed"}, map[string]any{"email": "ann@example.com", "tags": []any{"a"}},
				map[string]any{"email": "ann2@example.com"}, map[string]any{"email": "gone@example.com"}},
			Status: 201, Shape: shape{"created": 1, "updated": 0, "unchanged": 1, "held_back": 2, "imported": 2,
				"held": []any{shape{"row": 1, "status": "unsubscribed", "reason": "unsubscribed"}, shape{"row": 4, "reason": "suppressed"}}}},
		sc{Name: "subscriptions", Method: "GET", Path: "/v1/contacts/{ann}/subscriptions", Status: 200,
			Shape: shape{"contact_id": scenario.Var("ann"), "subscriptions": []any{shape{"email": "ann@example.com", "suppressed": false,
				"suppression_reason": nil, "topics": []any{}, "audiences": []any{shape{"audience_id": scenario.Var("aud"), "name": "News", "status": "subscribed",
					"membership_id": scenario.Prefix("mem_")}}}}}},
		sc{Name: "find the suppressed contact", Method: "GET", Path: "/v1/contacts?lookup=gone@example.com", Status: 200,
			Save: map[string]string{"gone": "contacts.0.id"}},
		sc{Name: "subscriptions of a suppressed address", Method: "GET", Path: "/v1/contacts/{gone}/subscriptions", Status: 200,
			Shape: shape{"subscriptions": []any{shape{"suppressed": true, "suppression_reason": "manual", "audiences": []any{shape{"status": "cleaned"}}}}}},
		sc{Name: "subscriptions of another workspace", Method: "GET", Path: "/v1/contacts/{ann}/subscriptions", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "bob still unsubscribed", Method: "GET", Path: "/v1/audiences/{aud}/contacts/{bob}", Status: 200, Shape: shape{"status": "unsubscribed"}},

		sc{Name: "delete member", Method: "DELETE", Path: "/v1/audiences/{aud}/contacts/{dee}", Status: 200, Shape: shape{"id": scenario.Var("dee"), "deleted": true}},
		sc{Name: "member gone", Method: "GET", Path: "/v1/audiences/{aud}/contacts/{dee}", Status: 404, Code: "not_found"},
		sc{Name: "contact kept", Method: "GET", Path: "/v1/contacts?lookup=dee@example.com", Status: 200, Shape: shape{"contacts": scenario.Len(1)}},
		sc{Name: "delete member from another workspace", Method: "DELETE", Path: "/v1/audiences/{aud}/contacts/{bob}", Key: "{other}", Status: 404, Code: "not_found"},

		sc{Name: "import into another workspace's audience", Method: "POST", Path: "/v1/audiences/{aud}/contacts", Key: "{other}",
			Body: []any{map[string]any{"email": "x@example.com"}}, Status: 404, Code: "not_found"},
		sc{Name: "import not JSON", Method: "POST", Path: "/v1/audiences/{aud}/contacts", Body: `[{"email":`, Status: 400, Code: "invalid_json"},
		sc{Name: "import a number", Method: "POST", Path: "/v1/audiences/{aud}/contacts", Body: `3`, Status: 400, Code: "invalid_request"},
		sc{Name: "import one object", Method: "POST", Path: "/v1/audiences/{aud}/contacts", Body: map[string]any{"email": "solo@example.com", "data": map[string]any{"k": "v"}},
			Status: 201, Shape: shape{"created": 1}},
	)

	// After the soft delete the memberships stay: importing into a new
	// audience of the same name starts afresh, but the old rows remain.
	r := a.Do("DELETE", "/v1/audiences/"+s.Get("aud"), nil)
	if r.Status != 200 {
		t.Fatalf("delete audience: %d %s", r.Status, r.Body)
	}
	r = a.Do("GET", "/v1/audiences/"+s.Get("aud")+"/contacts/"+s.Get("bob"), nil)
	if r.Status != 404 {
		t.Fatalf("member of a deleted audience: %d", r.Status)
	}
	// An import queues only the events some automation starts on (none
	// here): its tag and its new membership queued nothing; the contact's
	// create and its earlier tag, single changes, queued theirs
	// (TestEventTriggeredRuns has an import start runs).
	events, err := contacts.New(a.DB, clock.Real{}).AutomationEvents(context.Background(), a.WorkspaceID, s.Get("ann"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind+" "+fmt.Sprint(e.Data["tag"]))
	}
	if got := strings.Join(kinds, ","); got != "contact.created <nil>,tag.added old" {
		t.Fatalf("events after the import: %s", got)
	}
	r = a.Do("GET", "/v1/contacts/"+s.Get("ann")+"/subscriptions", nil)
	if subs := r.JSON()["subscriptions"].([]any); len(subs[0].(map[string]any)["audiences"].([]any)) != 0 {
		t.Fatalf("a deleted audience is still listed: %s", r.Body)
	}
}

func TestImportCSV(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	csvPost := func(name, query, body string, status int, code string, sh shape) sc {
		return sc{Name: name, Method: "POST", Path: "/v1/audiences/{aud}/contacts" + query, Body: body,
			Header: map[string]string{"Content-Type": "text/csv; charset=utf-8"}, Status: status, Code: code, Shape: sh}
	}
	s.Run(t,
		sc{Name: "audience", Method: "POST", Path: "/v1/audiences", Body: map[string]any{"name": "CSV"}, Status: 201, Save: map[string]string{"aud": "id"}},
		csvPost("BOM, CRLF, quotes", "", "\ufeffEmail,First_Name,tags,Notes\r\nann@example.com,\"Ann, Jr.\",\"vip,beta\",\"line one\r\nline two\"\r\nbob@example.com,Bob,,\r\n",
			201, "", shape{"created": 2, "tags_added": 2}),
		// encoding/csv turns a CRLF inside a quoted field into LF.
		sc{Name: "merge fields", Method: "GET", Path: "/v1/audiences/{aud}/contacts", Status: 200,
			Shape: shape{"contacts": scenario.Each(shape{"attributes": scenario.Present})},
			Check: func(t testing.TB, r *testapp.Response) {
				var p struct {
					Contacts []struct {
						Email      string            `json:"email"`
						Attributes map[string]string `json:"attributes"`
					} `json:"contacts"`
				}
				r.Decode(t, &p)
				for _, m := range p.Contacts {
					// A first-name column, however spelt, is the merge field first_name.
					want := map[string]string{"first_name": "Bob"}
					if m.Email == "ann@example.com" {
						want = map[string]string{"first_name": "Ann, Jr.", "Notes": "line one\nline two"}
					}
					if !maps.Equal(m.Attributes, want) {
						t.Errorf("%s: attributes %v, want %v", m.Email, m.Attributes, want)
					}
				}
			}},
		csvPost("semicolons and mapping", "?mapping.email=Mail&mapping.attr.Vorname=first_name&mapping.ignore=Intern&mapping.status=Zustand",
			"Mail;Vorname;Intern;Zustand\ncy@example.com;Cy;x;unsubscribed\n", 201, "", shape{"created": 1}),
		sc{Name: "cy mapped", Method: "GET", Path: "/v1/audiences/{aud}/contacts?status=unsubscribed", Status: 200,
			Shape: shape{"contacts": []any{shape{"email": "cy@example.com", "attributes": scenario.All(shape{"first_name": "Cy"}, scenario.Keys("first_name"))}}}},
		csvPost("tags column by mapping", "?mapping.tags=Labels", "email,Labels\nann@example.com,\"New, vip\"\n", 201, "",
			shape{"updated": 1, "tags_added": 1}),
		sc{Name: "ann's tags", Method: "GET", Path: "/v1/contacts?lookup=ann@example.com", Status: 200, Errors: scenario.Flat,
			Shape: shape{"contacts": []any{shape{"tags": []any{"beta", "new", "vip"}}}}},
		csvPost("names by mapping", "?mapping.first_name=Rufname&mapping.last_name=Familie", "email,Rufname,Familie,First Name\neve@example.com,Eve,Ng,Evelyn\n", 201, "",
			shape{"created": 1}),
		sc{Name: "eve's names", Method: "GET", Path: "/v1/contacts?lookup=eve@example.com", Status: 200, Errors: scenario.Flat,
			Shape: shape{"contacts": []any{shape{"first_name": "Eve", "last_name": "Ng"}}}},
		csvPost("ragged row", "", "email,name\na@example.com,A\nb@example.com\n", 400, "invalid_request", nil),
		csvPost("unterminated quote", "", "email,name\na@example.com,\"A\n", 400, "invalid_request", nil),
		csvPost("binary", "", "email\n\x00\x01\x02\n", 400, "invalid_request", nil),
		csvPost("no email column", "", "name\nA\n", 400, "invalid_request", nil),
		csvPost("empty header name", "", "email,,x\na@example.com,1,2\n", 400, "invalid_request", nil),
		csvPost("a bad row is reported", "", "email\nnot-an-address\nd@example.com\n", 201, "",
			shape{"created": 1, "skipped": 1, "errors": []any{shape{"row": 1, "email": "not-an-address"}}}),
		sc{Name: "nothing half-written", Method: "GET", Path: "/v1/audiences/{aud}/contacts", Status: 200, Shape: shape{"contact_count": 5}},
	)
}

func TestImportLimits(t *testing.T) {
	a := testapp.Start(t)
	r := a.Do("POST", "/v1/audiences", map[string]any{"name": "Big"})
	if r.Status != 201 {
		t.Fatalf("audience: %d %s", r.Status, r.Body)
	}
	aud := r.JSON()["id"].(string)
	post := func(ct, body string) *testapp.Response {
		req, _ := http.NewRequest("POST", a.URL+"/v1/audiences/"+aud+"/contacts", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Key)
		req.Header.Set("Content-Type", ct)
		return a.Send(req)
	}
	var b strings.Builder
	b.WriteString("email\n")
	for i := range 10001 {
		b.WriteString("u" + strconv.Itoa(i) + "@example.com\n")
	}
	if r := post("text/csv", b.String()); r.Status != 413 || r.ErrCode() != "too_many_contacts" {
		t.Fatalf("10001 rows: %d %s", r.Status, r.Body)
	}
	big := "email,pad\n" + strings.Repeat("a@example.com,"+strings.Repeat("p", 1000)+"\n", 8500)
	if r := post("text/csv", big); r.Status != 413 || r.ErrCode() != "import_too_large" {
		t.Fatalf("9 MB: %d %.200s", r.Status, r.Body)
	}
	r = a.Do("GET", "/v1/audiences/"+aud+"/contacts", nil)
	if n := r.JSON()["contact_count"]; n != float64(0) {
		t.Fatalf("refused imports wrote %v members", n)
	}
	// The largest allowed import goes in whole.
	b.Reset()
	b.WriteString("email,tags\n")
	for i := range 10000 {
		b.WriteString("u" + strconv.Itoa(i) + "@example.com,t1\n")
	}
	if r := post("text/csv", b.String()); r.Status != 201 || r.JSON()["created"] != float64(10000) {
		t.Fatalf("10000 rows: %d %.300s", r.Status, r.Body)
	}
}
