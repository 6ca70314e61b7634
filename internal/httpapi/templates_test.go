package httpapi_test

import (
	"strings"
	"testing"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

func TestTemplatesRoutes(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	s.Errors = scenario.Flat
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	s.Set("other", otherKey)
	r := a.Do("POST", "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}})
	s.Set("sendOnly", r.JSON()["key"].(string))

	post := func(name, path string, body any, status int, code string) sc {
		return sc{Name: name, Method: "POST", Path: path, Body: body, Status: status, Code: code}
	}
	s.Run(t,
		// Create: slug derived from the name, first version a draft.
		sc{Name: "create draft", Method: "POST", Path: "/v1/templates",
			Body: map[string]any{"name": "Welcome, friends!", "subject": "Hi {{name}}", "html": "<p>Hello {{name}} from {{company}}</p>",
				"variables": []any{"name", map[string]any{"name": "company", "default": "Acme"}}},
			Status: 201, Shape: shape{"id": scenario.Prefix("tpl_"), "name": "Welcome, friends!", "slug": "welcome-friends",
				"published_version_id": nil, "latest_version": 1, "sendable": false,
				"versions": []any{shape{"id": scenario.Prefix("tplv_"), "version": 1, "published": false, "subject": "Hi {{name}}",
					"variables": []any{shape{"name": "name", "required": true, "default": scenario.Absent},
						shape{"name": "company", "required": false, "default": "Acme"}}}}},
			Save: map[string]string{"tpl": "id", "v1": "versions.0.id"}},
		sc{Name: "same name gets a free slug", Method: "POST", Path: "/v1/templates", Body: map[string]any{"name": "Welcome friends", "text": "x", "publish": true},
			Status: 201, Shape: shape{"slug": "welcome-friends-2", "sendable": true, "published_version_id": scenario.Prefix("tplv_")},
			Save: map[string]string{"tpl2": "id"}},
		post("explicit slug taken", "/v1/templates", map[string]any{"name": "x", "slug": "welcome-friends", "text": "x"}, 409, "slug_taken"),
		post("bad slug", "/v1/templates", map[string]any{"name": "x", "slug": "Bad Slug", "text": "x"}, 400, "invalid_request"),
		post("no name", "/v1/templates", map[string]any{"text": "x"}, 400, "invalid_request"),
		post("unclosed section", "/v1/templates", map[string]any{"name": "x", "html": "{{#a}}never closed"}, 400, "invalid_request"),
		post("partial refused", "/v1/templates", map[string]any{"name": "x", "text": "{{> /etc/passwd}}"}, 400, "invalid_request"),
		post("bad variable", "/v1/templates", map[string]any{"name": "x", "text": "x", "variables": []any{5}}, 400, "invalid_request"),
		post("duplicate variable", "/v1/templates", map[string]any{"name": "x", "text": "x", "variables": []any{"a", "a"}}, 400, "invalid_request"),
		post("publish without body", "/v1/templates", map[string]any{"name": "x", "publish": true}, 400, "invalid_request"),
		post("unknown field", "/v1/templates", map[string]any{"name": "x", "body": "x"}, 400, "invalid_request"),
		post("not json", "/v1/templates", `{"name":`, 400, "invalid_json"),

		// Reads.
		sc{Name: "list", Method: "GET", Path: "/v1/templates", Status: 200,
			Shape: shape{"templates": scenario.Len(2), "has_more": false, "next_cursor": nil}},
		sc{Name: "get by slug", Method: "GET", Path: "/v1/templates/welcome-friends", Status: 200, Shape: shape{"id": scenario.Var("tpl"), "versions": scenario.Len(1)}},

		// Render and preview before publishing.
		post("render unpublished", "/v1/templates/{tpl}/render", map[string]any{"variables": map[string]any{"name": "Ann"}}, 422, "template_not_published"),
		sc{Name: "preview the draft", Method: "POST", Path: "/v1/templates/{tpl}/preview", Body: map[string]any{},
			Status: 200, Shape: shape{"subject": "Hi [name]", "html": "<p>Hello [name] from Acme</p>", "text": "Hello [name] from Acme",
				"filled_with_samples": []any{"name"}, "values": shape{"name": "[name]", "company": "Acme"}, "warnings": scenario.Len(2)}},

		// Versions: drafts never publish; publish by number, id, or latest.
		sc{Name: "add version", Method: "POST", Path: "/v1/templates/{tpl}/versions",
			Body:   map[string]any{"html": "<body><p>V2 {{name}}</p></body>", "text": "V2 {{name}}", "variables": []any{map[string]any{"name": "name", "required": true}}},
			Status: 201, Shape: shape{"version": 2, "subject": "", "published": false}, Save: map[string]string{"v2": "id"}},
		post("version without body", "/v1/templates/{tpl}/versions", map[string]any{"subject": "x"}, 400, "invalid_request"),
		sc{Name: "still unpublished", Method: "GET", Path: "/v1/templates/{tpl}", Status: 200,
			Shape: shape{"sendable": false, "latest_version": 2, "published_version_id": nil, "versions": scenario.Len(2)}},
		sc{Name: "publish version 1", Method: "POST", Path: "/v1/templates/{tpl}/publish", Body: map[string]any{"version": 1},
			Status: 200, Shape: shape{"published_version_id": scenario.Var("v1")}},
		sc{Name: "versions list", Method: "GET", Path: "/v1/templates/{tpl}/versions", Status: 200,
			Shape: shape{"published_version_id": scenario.Var("v1"), "versions": []any{shape{"version": 2, "published": false}, shape{"version": 1, "published": true}}}},
		post("publish missing number", "/v1/templates/{tpl}/publish", map[string]any{"version": 9}, 404, "not_found"),
		post("publish missing id", "/v1/templates/{tpl}/publish", map[string]any{"version_id": "tplv_nope"}, 404, "not_found"),
		post("publish both", "/v1/templates/{tpl}/publish", map[string]any{"version": 1, "version_id": "{v1}"}, 400, "invalid_request"),

		// Strict render of version 1: name is required, company defaults.
		sc{Name: "render missing", Method: "POST", Path: "/v1/templates/{tpl}/render", Body: map[string]any{},
			Status: 422, Code: "template_variables_missing", Shape: shape{"message": scenario.Prefix("Missing required variables: name")}},
		sc{Name: "render", Method: "POST", Path: "/v1/templates/{tpl}/render",
			Body:   map[string]any{"variables": map[string]any{"name": "<Ann & Bo>"}, "preheader": "Hi {{name}}"},
			Status: 200, Shape: shape{"subject": "Hi <Ann & Bo>", "text": "Hello <Ann & Bo> from Acme", "preheader": "Hi <Ann & Bo>", "version": 1},
			Check: func(t testing.TB, r *testapp.Response) {
				html := r.JSON()["html"].(string)
				if !strings.Contains(html, "Hi &lt;Ann &amp; Bo&gt;</div><p>Hello &lt;Ann &amp; Bo&gt; from Acme</p>") || !strings.Contains(html, "display:none") {
					t.Errorf("html = %q: want the hidden preheader, then the escaped body", html)
				}
			}},
		sc{Name: "publish latest", Method: "POST", Path: "/v1/templates/{tpl}/publish", Status: 200, Shape: shape{"published_version_id": scenario.Var("v2")}},
		sc{Name: "render v2", Method: "POST", Path: "/v1/templates/{tpl}/render", Body: map[string]any{"variables": map[string]any{"name": "Cy"}},
			Status: 200, Shape: shape{"html": "<body><p>V2 Cy</p></body>", "text": "V2 Cy", "version": 2}},
		sc{Name: "preview v1 by id", Method: "POST", Path: "/v1/templates/{tpl}/preview", Body: map[string]any{"version_id": "{v1}", "variables": map[string]any{"name": "Di"}},
			Status: 200, Shape: shape{"html": "<p>Hello Di from Acme</p>", "filled_with_samples": scenario.Len(0), "warnings": scenario.Len(1), "version": 1}},
		sc{Name: "render with no body", Method: "POST", Path: "/v1/templates/{tpl2}/render", Status: 200, Shape: shape{"text": "x"}},

		// PATCH changes only name, slug, description.
		sc{Name: "patch", Method: "PATCH", Path: "/v1/templates/{tpl}", Body: map[string]any{"name": "Welcome", "slug": "welcome", "description": "First mail"},
			Status: 200, Shape: shape{"name": "Welcome", "slug": "welcome", "description": "First mail", "published_version_id": scenario.Var("v2")}},
		sc{Name: "patch content refused", Method: "PATCH", Path: "/v1/templates/{tpl}", Body: map[string]any{"html": "x"}, Status: 400, Code: "invalid_request"},
		sc{Name: "patch to a taken slug", Method: "PATCH", Path: "/v1/templates/{tpl2}", Body: map[string]any{"slug": "welcome"}, Status: 409, Code: "slug_taken"},

		// Other workspaces and scopes.
		sc{Name: "other workspace reads", Method: "GET", Path: "/v1/templates/{tpl}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "other workspace renders", Method: "POST", Path: "/v1/templates/{tpl}/render", Key: "{other}", Body: map[string]any{}, Status: 404, Code: "not_found"},
		sc{Name: "send-only key", Method: "GET", Path: "/v1/templates", Key: "{sendOnly}", Status: 403, Code: "insufficient_scope"},
		sc{Name: "no key", Method: "GET", Path: "/v1/templates", Key: scenario.NoKey, Status: 401, Code: "unauthorized"},
		sc{Name: "unknown sub-route", Method: "GET", Path: "/v1/templates/{tpl}/nope", Status: 404, Code: "not_found"},

		// Soft delete frees the slug and hides the template.
		sc{Name: "delete", Method: "DELETE", Path: "/v1/templates/welcome", Status: 200, Shape: shape{"deleted": scenario.Var("tpl")}},
		sc{Name: "deleted is gone", Method: "GET", Path: "/v1/templates/{tpl}", Status: 404, Code: "not_found"},
		sc{Name: "delete again", Method: "DELETE", Path: "/v1/templates/{tpl}", Status: 404, Code: "not_found"},
		sc{Name: "slug free again", Method: "POST", Path: "/v1/templates", Body: map[string]any{"name": "x", "slug": "welcome", "text": "x"}, Status: 201},
	)
}

// TestTemplateBadInput: hostile templates and variables answer a clear 4xx.
func TestTemplateBadInput(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	s.Errors = scenario.Flat
	list := make([]any, 200)
	for i := range list {
		list[i] = i
	}
	s.Run(t,
		sc{Name: "nested loops", Method: "POST", Path: "/v1/templates",
			Body:   map[string]any{"name": "loops", "text": "{{#a}}{{#a}}{{#a}}{{#a}}{{.}}{{/a}}{{/a}}{{/a}}{{/a}}", "publish": true},
			Status: 201, Save: map[string]string{"loops": "id"}},
		sc{Name: "render over the step cap", Method: "POST", Path: "/v1/templates/{loops}/render", Body: map[string]any{"variables": map[string]any{"a": list}},
			Status: 422, Code: "template_render_failed"},
		sc{Name: "template over 1 MB", Method: "POST", Path: "/v1/templates", Body: map[string]any{"name": "big", "html": strings.Repeat("x", 2<<20)},
			Status: 413, Code: "request_too_large"},
		sc{Name: "deep nesting", Method: "POST", Path: "/v1/templates",
			Body:   map[string]any{"name": "deep", "text": strings.Repeat("{{#a}}", 5000) + strings.Repeat("{{/a}}", 5000), "publish": true},
			Status: 400, Code: "invalid_request"},
		sc{Name: "nesting at the cap", Method: "POST", Path: "/v1/templates",
			Body:   map[string]any{"name": "deep", "text": strings.Repeat("{{#a}}", 50) + "x" + strings.Repeat("{{/a}}", 50), "publish": true},
			Status: 201, Save: map[string]string{"deep": "id"}},
		sc{Name: "deep renders", Method: "POST", Path: "/v1/templates/{deep}/render", Body: map[string]any{"variables": map[string]any{"a": true}},
			Status: 200, Shape: shape{"text": "x"}},
		sc{Name: "CR/LF in a variable stays out of the subject", Method: "POST", Path: "/v1/templates",
			Body: map[string]any{"name": "crlf", "subject": "Hi {{n}}", "text": "x", "publish": true}, Status: 201, Save: map[string]string{"crlf": "id"}},
		sc{Name: "render crlf", Method: "POST", Path: "/v1/templates/{crlf}/render", Body: map[string]any{"variables": map[string]any{"n": "a\r\nBcc: x@example.com"}},
			Status: 200, Shape: shape{"subject": "Hi a  Bcc: x@example.com"}},
	)
}
