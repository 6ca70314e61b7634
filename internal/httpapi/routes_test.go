package httpapi_test

import (
	"io"
	"strings"
	"testing"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

type (
	sc    = scenario.Case
	shape = scenario.Shape
)

func TestAPIKeysLifecycle(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	s.Set("other", otherKey)
	s.Run(t,
		sc{Name: "create a send-only key", Method: "POST", Path: "/v1/api-keys",
			Body:   map[string]any{"name": "sender", "scopes": []string{"mail:send"}},
			Status: 201, Shape: shape{"key": scenario.Prefix("mr_"), "name": "sender", "scopes": []string{"mail:send"}},
			Save: map[string]string{"sender": "key", "senderID": "id"},
			Check: func(t testing.TB, r *testapp.Response) {
				if k := r.JSON()["key"].(string); len(k) < 40 {
					t.Fatalf("short key %q", k)
				}
			}},
		sc{Name: "the list shows no key values", Method: "GET", Path: "/v1/api-keys", Status: 200,
			Shape: shape{"key": scenario.Absent, "api_keys": scenario.All(scenario.Len(2), scenario.Each(shape{"key": scenario.Absent}))},
			Save:  map[string]string{"firstID": "api_keys.0.id"},
			Check: func(t testing.TB, r *testapp.Response) {
				if strings.Contains(string(r.Body), s.Get("sender")) {
					t.Fatalf("list shows a key value: %s", r.Body)
				}
			}},
		sc{Name: "the new key works for its scope only", Method: "GET", Path: "/v1/api-keys", Key: "{sender}",
			Status: 403, Code: "insufficient_scope"},
		sc{Name: "a key created without scopes has all three", Method: "POST", Path: "/v1/api-keys",
			Body: map[string]any{"name": "all"}, Status: 201, Shape: shape{"scopes": scenario.Len(3)}},
		sc{Name: "revoke", Method: "DELETE", Path: "/v1/api-keys/{senderID}", Status: 200, Shape: shape{"deleted": scenario.Var("senderID")}},
		sc{Name: "revocation is effective on the next request", Method: "GET", Path: "/v1/api-keys", Key: "{sender}",
			Status: 401, Code: "unauthorized"},
		sc{Name: "a second revoke", Method: "DELETE", Path: "/v1/api-keys/{senderID}", Status: 404, Code: "not_found"},
		sc{Name: "another workspace's key id answers 404, never 403", Method: "DELETE", Path: "/v1/api-keys/{firstID}", Key: "{other}",
			Status: 404, Code: "not_found"},
		sc{Name: "unknown scope", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "x", "scopes": []string{"admin"}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "empty scopes", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"scopes": []string{}},
			Status: 400, Code: "invalid_request"},
		sc{Name: "name not a string", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": 5},
			Status: 400, Code: "invalid_request"},
		sc{Name: "a named key with an empty scope list is refused, not made full-access", Method: "POST", Path: "/v1/api-keys",
			Body: map[string]any{"name": "none", "scopes": []string{}}, Status: 400, Code: "invalid_request"},
		sc{Name: "null scopes give full access", Method: "POST", Path: "/v1/api-keys",
			Body: map[string]any{"name": "full", "scopes": nil}, Status: 201, Shape: shape{"scopes": scenario.Len(3)}},
		sc{Name: "the refused empty list created no key", Method: "GET", Path: "/v1/api-keys", Status: 200,
			Check: func(t testing.TB, r *testapp.Response) {
				for _, k := range r.JSON()["api_keys"].([]any) {
					if k.(map[string]any)["name"] == "none" {
						t.Fatalf("a key with empty scopes was created: %v", k)
					}
				}
			}},
	)
}

func TestAuthentication(t *testing.T) {
	a := testapp.Start(t)
	headers := func(t testing.TB, r *testapp.Response) {
		if r.Header.Get("x-request-id") == "" || r.Header.Get("RateLimit-Limit") == "" {
			t.Fatalf("missing headers: %v", r.Header)
		}
	}
	c := func(name, authz string) sc {
		key := scenario.NoKey
		var h map[string]string
		if authz != "" {
			h = map[string]string{"Authorization": authz}
		}
		return sc{Name: name, Method: "GET", Path: "/v1/api-keys", Key: key, Header: h, Status: 401, Code: "unauthorized", Check: headers}
	}
	scenario.New(a).Run(t,
		c("absent", ""),
		c("basic", "Basic dXNlcjpwYXNz"),
		c("wrong", "Bearer mr_"+strings.Repeat("a", 52)),
		c("malformed", "Bearer hello"),
		c("no prefix", "Bearer "+a.Key[3:]),
	)
}

func TestBadBodies(t *testing.T) {
	a := testapp.Start(t)
	big := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
	c := func(name, ctype string, body any, status int, code string) sc {
		return sc{Name: name, Method: "POST", Path: "/v1/api-keys", Header: map[string]string{"Content-Type": ctype},
			Body: body, Status: status, Code: code}
	}
	s := scenario.New(a)
	s.Run(t,
		c("not json", "application/json", `{"name":`, 400, "invalid_json"),
		c("empty", "application/json", ``, 400, "invalid_json"),
		c("array", "application/json", `[1,2]`, 400, "invalid_request"),
		c("wrong type", "application/json", `{"name":["a"]}`, 400, "invalid_request"),
		c("unknown field", "application/json", `{"name":"a","colour":"red"}`, 400, "invalid_request"),
		c("form", "application/x-www-form-urlencoded", `name=a`, 400, "invalid_request"),
		c("bad utf8", "application/json", "{\"name\":\"\xff\xfe\"}", 400, "invalid_json"),
		c("two values", "application/json", `{"name":"a"}{"name":"b"}`, 400, "invalid_json"),
		c("too large", "application/json", big, 413, "request_too_large"),
		// Without a Content-Length (chunked), the body is read another way.
		c("too large, chunked", "application/json", io.MultiReader(strings.NewReader(big)), 413, "request_too_large"),
		c("not json, chunked", "application/json", io.MultiReader(strings.NewReader(`{"name":`)), 400, "invalid_json"),
		sc{Name: "nothing was written by any of them", Method: "GET", Path: "/v1/api-keys", Status: 200,
			Shape: shape{"api_keys": scenario.Len(1)}},
	)
}

// TestErrorShapesFollowTheSpec holds the spec's two error shapes per route
// family ("Errors / Body shapes"): on a route's own errors, on unknown
// routes under a family (whatever the method), and on the answers of the
// middleware that runs before the route (authentication).
func TestErrorShapesFollowTheSpec(t *testing.T) {
	a := testapp.Start(t)
	const flat, nested = scenario.Flat, scenario.Nested
	c := func(method, path, key string, status int, code string, errs scenario.ErrShape) sc {
		return sc{Name: method + " " + path, Method: method, Path: path, Key: key, Status: status, Code: code, Errors: errs}
	}
	scenario.New(a).Run(t,
		c("GET", "/v1/emails/em_nope", "", 404, "not_found", nested),
		c("GET", "/v1/domains/dom_nope", "", 404, "not_found", nested),
		c("GET", "/v1/webhooks/wh_nope", "", 404, "not_found", nested),
		c("DELETE", "/v1/api-keys/key_nope", "", 404, "not_found", nested),
		c("DELETE", "/v1/suppressions/sup_nope", "", 404, "not_found", flat),

		c("GET", "/v1/nothing-here", "", 404, "not_found", nested),
		c("PUT", "/v1/emails", "", 404, "not_found", nested),
		c("PUT", "/v1/suppressions", "", 404, "not_found", flat),
		c("GET", "/v1/suppressions/", "", 404, "not_found", flat),
		c("GET", "/v1/suppressions/sup_1/more", "", 404, "not_found", flat),
		c("GET", "/v1/topics/zzz/unknown", "", 404, "not_found", flat),
		c("GET", "/v1/templates/tpl_1/unknown", "", 404, "not_found", flat),
		c("PUT", "/v1/templates", "", 404, "not_found", flat),
		c("GET", "/v1/templates/tpl_nope", "", 404, "not_found", flat),
		// The contacts and audiences routes exist now: their own errors, and
		// unknown paths or methods under them, keep each family's shape.
		c("GET", "/v1/contacts?cursor=bad", "", 422, "invalid_cursor", flat),
		c("PUT", "/v1/contacts", "", 404, "not_found", flat),
		c("GET", "/v1/contacts/con_1", "", 404, "not_found", flat),
		sc{Name: "POST /v1/contacts/duplicates", Method: "POST", Path: "/v1/contacts/duplicates", Body: `{}`, Status: 400, Code: "invalid_request", Errors: flat},
		c("GET", "/v1/contacts/con_1/tags", "", 404, "not_found", nested),
		c("DELETE", "/v1/contacts/con_1/tags/vip", "", 404, "not_found", nested),
		sc{Name: "PATCH /v1/contacts/con_1/attributes", Method: "PATCH", Path: "/v1/contacts/con_1/attributes", Body: `{"a":"b"}`,
			Status: 404, Code: "not_found", Errors: nested},
		c("GET", "/v1/contacts/con_1/subscriptions", "", 404, "not_found", nested),
		c("GET", "/v1/audiences/aud_nope", "", 404, "not_found", nested),
		c("PUT", "/v1/audiences", "", 404, "not_found", nested),

		c("GET", "/v1/emails", scenario.NoKey, 401, "unauthorized", nested),
		c("GET", "/v1/suppressions", scenario.NoKey, 401, "unauthorized", flat),
		c("GET", "/v1/topics", scenario.NoKey, 401, "unauthorized", flat),
		c("GET", "/v1/contacts/con_1", scenario.NoKey, 401, "unauthorized", flat),
		c("GET", "/v1/contacts/con_1/tags", scenario.NoKey, 401, "unauthorized", nested),
		c("GET", "/v1/nothing-here", scenario.NoKey, 401, "unauthorized", nested),
	)
}
