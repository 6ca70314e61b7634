package contacts_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

type (
	sc    = scenario.Case
	shape = scenario.Shape
)

// TestContactPropertiesRoutes: a property is declared, read, listed,
// given another fallback and removed over /v1/contact-properties; bad
// input answers 400 or 409 with the reason, an unknown id and another
// workspace's property 404.
func TestContactPropertiesRoutes(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a).WithOther()
	s.Run(t,
		sc{Name: "create a string property", Method: "POST", Path: "/v1/contact-properties",
			Body:   map[string]any{"key": "plan", "type": "string", "fallback_value": "free"},
			Status: 201, Shape: shape{"object": "contact_property", "id": scenario.Prefix("cprop_"), "key": "plan", "type": "string", "fallback_value": "free"},
			Save: map[string]string{"plan": "id"}},
		sc{Name: "create a number property without fallback", Method: "POST", Path: "/v1/contact-properties",
			Body: map[string]any{"key": "seats", "type": "number"}, Status: 201, Shape: shape{"type": "number", "fallback_value": nil},
			Save: map[string]string{"seats": "id"}},
		sc{Name: "the key is taken", Method: "POST", Path: "/v1/contact-properties",
			Body: map[string]any{"key": "plan", "type": "number"}, Status: 409, Code: "contact_property_exists"},
		sc{Name: "no key", Method: "POST", Path: "/v1/contact-properties", Body: map[string]any{"type": "string"}, Status: 400, Code: "invalid_request"},
		sc{Name: "no type", Method: "POST", Path: "/v1/contact-properties", Body: map[string]any{"key": "x"}, Status: 400, Code: "invalid_request"},
		sc{Name: "unknown type", Method: "POST", Path: "/v1/contact-properties", Body: map[string]any{"key": "x", "type": "date"}, Status: 400, Code: "invalid_request"},
		sc{Name: "a string fallback on a number", Method: "POST", Path: "/v1/contact-properties",
			Body: map[string]any{"key": "x", "type": "number", "fallback_value": "one"}, Status: 400, Code: "invalid_request"},
		sc{Name: "an object fallback", Method: "POST", Path: "/v1/contact-properties",
			Body: map[string]any{"key": "x", "type": "string", "fallback_value": map[string]any{}}, Status: 400, Code: "invalid_request"},
		sc{Name: "a contact field's name", Method: "POST", Path: "/v1/contact-properties",
			Body: map[string]any{"key": "email", "type": "string"}, Status: 400, Code: "invalid_request"},
		sc{Name: "an unknown field", Method: "POST", Path: "/v1/contact-properties",
			Body: map[string]any{"key": "x", "type": "string", "fallback": "y"}, Status: 400, Code: "invalid_request"},
		sc{Name: "get", Method: "GET", Path: "/v1/contact-properties/{plan}", Status: 200,
			Shape: shape{"id": scenario.Var("plan"), "key": "plan", "fallback_value": "free", "created_at": scenario.Present}},
		sc{Name: "list by key", Method: "GET", Path: "/v1/contact-properties", Status: 200,
			Shape: shape{"object": "list", "has_more": false, "data": scenario.Len(2)},
			Check: func(t testing.TB, r *testapp.Response) {
				d := r.JSON()["data"].([]any)
				if d[0].(map[string]any)["key"] != "plan" || d[1].(map[string]any)["key"] != "seats" {
					t.Errorf("not listed by key: %s", r.Body)
				}
			}},
		sc{Name: "a number fallback", Method: "PATCH", Path: "/v1/contact-properties/{seats}", Body: map[string]any{"fallback_value": 2.5},
			Status: 200, Shape: shape{"fallback_value": 2.5}},
		sc{Name: "a string fallback on a number property", Method: "PATCH", Path: "/v1/contact-properties/{seats}", Body: map[string]any{"fallback_value": "x"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "the type does not change", Method: "PATCH", Path: "/v1/contact-properties/{seats}", Body: map[string]any{"type": "string"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "a patch names the fallback", Method: "PATCH", Path: "/v1/contact-properties/{seats}", Body: map[string]any{}, Status: 400, Code: "invalid_request"},
		sc{Name: "change the fallback", Method: "PATCH", Path: "/v1/contact-properties/{plan}", Body: map[string]any{"fallback_value": "basic"},
			Status: 200, Shape: shape{"fallback_value": "basic"}},
		sc{Name: "null removes the fallback", Method: "PATCH", Path: "/v1/contact-properties/{seats}", Body: map[string]any{"fallback_value": nil},
			Status: 200, Shape: shape{"fallback_value": nil}},
		sc{Name: "unknown id", Method: "GET", Path: "/v1/contact-properties/cprop_nope", Status: 404, Code: "not_found"},
		sc{Name: "unknown id: patch", Method: "PATCH", Path: "/v1/contact-properties/cprop_nope", Body: map[string]any{"fallback_value": "x"}, Status: 404, Code: "not_found"},
		sc{Name: "another workspace: get", Method: "GET", Path: "/v1/contact-properties/{plan}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "another workspace: patch", Method: "PATCH", Path: "/v1/contact-properties/{plan}", Key: "{other}", Body: map[string]any{"fallback_value": "x"},
			Status: 404, Code: "not_found"},
		sc{Name: "another workspace: delete", Method: "DELETE", Path: "/v1/contact-properties/{plan}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "another workspace lists none", Method: "GET", Path: "/v1/contact-properties", Key: "{other}", Status: 200, Shape: shape{"data": scenario.Len(0)}},
		sc{Name: "still there", Method: "GET", Path: "/v1/contact-properties/{plan}", Status: 200, Shape: shape{"fallback_value": "basic"}},
		sc{Name: "delete", Method: "DELETE", Path: "/v1/contact-properties/{plan}", Status: 200,
			Shape: shape{"object": "contact_property", "id": scenario.Var("plan"), "deleted": true}},
		sc{Name: "delete again", Method: "DELETE", Path: "/v1/contact-properties/{plan}", Status: 404, Code: "not_found"},
		sc{Name: "the key is free again", Method: "POST", Path: "/v1/contact-properties", Body: map[string]any{"key": "plan", "type": "number"}, Status: 201},
	)
}

// TestPropertyFallbackInBroadcast: a broadcast renders a declared
// property's fallback for the member lacking the attribute and the
// member's own value for the other, in the preview and in the delivered
// mail; the merge field is no unknown_merge_field. Segment rules on the
// attribute read the stored values, the contact's segments list holds
// the one it meets, and removing the property leaves the value in place.
func TestPropertyFallbackInBroadcast(t *testing.T) {
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()))
	do := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		r := a.Do(method, path, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, want, r.Body)
		}
		return r.JSON()
	}
	pro := do("POST", "/v1/contacts", map[string]any{"email": "pro@example.net", "attributes": map[string]any{"plan": "pro"}}, 201)["id"].(string)
	plain := do("POST", "/v1/contacts", map[string]any{"email": "plain@example.net"}, 201)["id"].(string)
	aud := do("POST", "/v1/audiences", map[string]any{"name": "Plans"}, 201)["id"].(string)
	do("POST", "/v1/audiences/"+aud+"/contacts", []any{map[string]any{"email": "pro@example.net"}, map[string]any{"email": "plain@example.net"}}, 201)
	prop := do("POST", "/v1/contact-properties", map[string]any{"key": "plan", "type": "string", "fallback_value": "free"}, 201)["id"].(string)
	seg := do("POST", "/v1/segments", map[string]any{"name": "Pro", "rules": []any{map[string]any{"field": "attributes.plan", "op": "eq", "value": "pro"}}}, 201)["id"].(string)

	bc := do("POST", "/v1/broadcasts", map[string]any{"from": "News <onboarding@mailroom.test>", "audience_id": aud, "subject": "Your plan",
		"html": "<p>Plan: {{ plan }}.</p>", "text": "Plan: {{ plan }}."}, 201)
	if bc["ready"] != true {
		t.Fatalf("a merge field with a fallback should not stop the broadcast: %v", bc["problems"])
	}
	for email, want := range map[string]string{"pro@example.net": "Plan: pro.", "plain@example.net": "Plan: free."} {
		p := do("GET", "/v1/broadcasts/"+bc["id"].(string)+"/preview?email="+email, nil, 200)
		if !strings.Contains(p["html"].(string), want) {
			t.Errorf("preview for %s: %q lacks %q", email, p["html"], want)
		}
	}
	do("POST", "/v1/broadcasts/"+bc["id"].(string)+"/send", nil, 200)
	got := map[string]string{}
	for _, m := range sink.WaitFor(2, 20*time.Second) {
		got[strings.Join(m.To, ",")] = string(m.Data)
	}
	for to, want := range map[string]string{"pro@example.net": "Plan: pro.", "plain@example.net": "Plan: free."} {
		if !strings.Contains(got[to], want) {
			t.Errorf("mail to %s lacks %q:\n%s", to, want, got[to])
		}
	}

	// Segments read the stored value, not the fallback.
	if n := do("GET", "/v1/segments/"+seg+"?count=live", nil, 200)["member_count"]; n != float64(1) {
		t.Errorf("segment attributes.plan = pro counts %v, want 1", n)
	}
	for id, want := range map[string]bool{pro: true, plain: false} {
		listed := false
		for _, x := range do("GET", "/v1/contacts/"+id+"/segments", nil, 200)["data"].([]any) {
			listed = listed || x.(map[string]any)["id"] == seg
		}
		if listed != want {
			t.Errorf("contact %s lists segment Pro: %v, want %v", id, listed, want)
		}
	}
	r := a.Do(http.MethodGet, "/v1/contacts/nobody@example.net/segments", nil)
	if r.Status != 404 {
		t.Errorf("segments of an unknown address: %d %s", r.Status, r.Body)
	}

	// Removing the property keeps the contact's value.
	do("DELETE", "/v1/contact-properties/"+prop, nil, 200)
	if v := do("GET", "/v1/contacts/"+pro, nil, 200)["attributes"].(map[string]any)["plan"]; v != "pro" {
		t.Errorf("after removing the property the contact's plan is %v, want pro", v)
	}
	p := do("GET", "/v1/broadcasts/"+bc["id"].(string)+"/preview?email=plain@example.net", nil, 200)
	if strings.Contains(p["html"].(string), "free") {
		t.Errorf("a removed property's fallback still renders: %q", p["html"])
	}
}
