package httpapi_test

import (
	"testing"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

func TestTopicsRoutes(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	s.Errors = scenario.Flat
	_, otherKey := a.NewWorkspace("Other", "other@example.com")
	s.Set("other", otherKey)
	post := func(name, path string, body any, status int, code string) sc {
		return sc{Name: name, Method: "POST", Path: path, Body: body, Status: status, Code: code}
	}
	prefs := "/v1/topics/preferences"
	s.Run(t,
		sc{Name: "create with defaults", Method: "POST", Path: "/v1/topics", Body: map[string]any{"name": "Product News!", "description": "What we ship"},
			Status: 201, Shape: shape{"id": scenario.Prefix("top_"), "key": "product-news", "name": "Product News!", "default_opt_in": true,
				"required": false, "archived": false, "archived_at": nil},
			Save: map[string]string{"news": "id"}},
		sc{Name: "derived key taken gets a suffix", Method: "POST", Path: "/v1/topics", Body: map[string]any{"name": "product news"},
			Status: 201, Shape: shape{"key": "product-news-2"}, Save: map[string]string{"news2": "id"}},
		sc{Name: "opt-in topic", Method: "POST", Path: "/v1/topics", Body: map[string]any{"name": "Tips", "key": "tips", "default_opt_in": false},
			Status: 201, Shape: shape{"key": "tips", "default_opt_in": false}, Save: map[string]string{"tips": "id"}},
		sc{Name: "required topic", Method: "POST", Path: "/v1/topics", Body: map[string]any{"name": "Account", "key": "account", "required": true},
			Status: 201, Shape: shape{"required": true}},
		post("given key taken", "/v1/topics", map[string]any{"name": "x", "key": "tips"}, 409, "topic_exists"),
		post("key too short", "/v1/topics", map[string]any{"name": "x", "key": "a"}, 400, "invalid_request"),
		post("key upper case", "/v1/topics", map[string]any{"name": "x", "key": "News"}, 400, "invalid_request"),
		post("no name", "/v1/topics", map[string]any{"key": "xx"}, 400, "invalid_request"),
		post("name with CR LF", "/v1/topics", map[string]any{"name": "a\r\nBcc: x@y.z"}, 400, "invalid_request"),
		post("unknown field", "/v1/topics", map[string]any{"name": "x", "colour": "red"}, 400, "invalid_request"),
		post("not json", "/v1/topics", `{"name":`, 400, "invalid_json"),

		sc{Name: "get by key", Method: "GET", Path: "/v1/topics/tips", Status: 200, Shape: shape{"id": scenario.Var("tips")}},
		sc{Name: "other workspace sees nothing", Method: "GET", Path: "/v1/topics/{tips}", Key: "{other}", Status: 404, Code: "not_found"},
		sc{Name: "patch", Method: "PATCH", Path: "/v1/topics/{news2}", Body: map[string]any{"name": "Old news", "default_opt_in": false},
			Status: 200, Shape: shape{"name": "Old news", "key": "product-news-2", "default_opt_in": false}},
		sc{Name: "patch same key is fine", Method: "PATCH", Path: "/v1/topics/{news2}", Body: map[string]any{"key": "product-news-2"}, Status: 200},
		sc{Name: "key is immutable", Method: "PATCH", Path: "/v1/topics/{news2}", Body: map[string]any{"key": "renamed"}, Status: 400, Code: "invalid_request"},
		sc{Name: "archive", Method: "DELETE", Path: "/v1/topics/{news2}", Status: 200, Shape: shape{"archived": true, "archived_at": scenario.Present}},
		sc{Name: "list hides archived", Method: "GET", Path: "/v1/topics", Status: 200,
			Shape: shape{"topics": scenario.Len(3), "has_more": false, "next_cursor": nil}},
		sc{Name: "list with archived", Method: "GET", Path: "/v1/topics?include_archived=true", Status: 200, Shape: shape{"topics": scenario.Len(4)}},
		sc{Name: "bad include_archived", Method: "GET", Path: "/v1/topics?include_archived=maybe", Status: 400, Code: "invalid_request"},
		sc{Name: "archived key stays reserved", Method: "POST", Path: "/v1/topics", Body: map[string]any{"name": "x", "key": "product-news-2"}, Status: 409, Code: "topic_exists"},
		sc{Name: "unknown topic", Method: "GET", Path: "/v1/topics/top_nope", Status: 404, Code: "not_found"},
		sc{Name: "unknown method", Method: "PUT", Path: "/v1/topics/{tips}", Status: 404, Code: "not_found"},

		// Preferences: defaults until the address chooses.
		sc{Name: "preferences by default", Method: "GET", Path: prefs + "?email=Ann@Example.com", Status: 200,
			Shape: shape{"email": "ann@example.com", "preference_url": scenario.Prefix(a.Config.PublicURL + "/preferences/"),
				"preferences": []any{
					shape{"key": "product-news", "subscribed": true, "source": nil, "updated_at": nil},
					shape{"key": "tips", "subscribed": false},
					shape{"key": "account", "subscribed": true, "required": true}}}},
		sc{Name: "ask one topic (no subscribed)", Method: "POST", Path: prefs, Body: map[string]any{"email": "ann@example.com", "topic": "tips"}, Status: 200,
			Shape: shape{"preferences": []any{shape{"key": "tips", "subscribed": false, "source": nil}}}},
		sc{Name: "switch tips on", Method: "POST", Path: prefs, Body: map[string]any{"email": "ann@example.com", "topic": "{tips}", "subscribed": true, "source": "signup-form"},
			Status: 200, Shape: shape{"preferences": []any{shape{"key": "tips", "subscribed": true, "source": "signup-form", "updated_at": scenario.Present}}}},
		sc{Name: "switch news off", Method: "POST", Path: prefs, Body: map[string]any{"email": "ann@example.com", "topic": "product-news", "subscribed": false},
			Status: 200, Shape: shape{"preferences": []any{shape{"key": "product-news", "subscribed": false, "source": "api"}}}},
		sc{Name: "read back", Method: "GET", Path: prefs + "?email=ann@example.com", Status: 200,
			Shape: shape{"preferences": []any{shape{"subscribed": false}, shape{"subscribed": true}, shape{"subscribed": true}}}},
		post("required cannot be switched off", prefs, map[string]any{"email": "ann@example.com", "topic": "account", "subscribed": false}, 422, "topic_required"),
		post("unknown topic", prefs, map[string]any{"email": "ann@example.com", "topic": "nope", "subscribed": false}, 404, "topic_not_found"),
		post("archived topic", prefs, map[string]any{"email": "ann@example.com", "topic": "product-news-2", "subscribed": false}, 404, "topic_not_found"),
		post("no email", prefs, map[string]any{"topic": "tips"}, 400, "invalid_request"),
		post("bad email", prefs, map[string]any{"email": "not an address"}, 400, "invalid_request"),
		post("subscribed not a boolean", prefs, map[string]any{"email": "a@b.co", "subscribed": "no"}, 400, "invalid_request"),
		sc{Name: "GET without email", Method: "GET", Path: prefs, Status: 400, Code: "invalid_request"},
		sc{Name: "unsubscribe from all", Method: "POST", Path: prefs, Body: map[string]any{"email": "ann@example.com", "subscribed": false},
			Status: 200, Shape: shape{"preferences": []any{shape{"subscribed": false}, shape{"subscribed": false}, shape{"key": "account", "subscribed": true}}}},
		sc{Name: "other workspace has its own", Method: "GET", Path: prefs + "?email=ann@example.com", Key: "{other}", Status: 200,
			Shape: shape{"preferences": scenario.Len(0)}},
	)
}
