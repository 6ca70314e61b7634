package httpapi_test

import (
	"testing"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// TestContactsAndAudiencesNeedWorkspaceScope: a send-only key is refused on
// every family of the area, in that family's error shape, and the hosted
// confirmation page needs no key but a valid link.
func TestContactsAndAudiencesNeedWorkspaceScope(t *testing.T) {
	a := testapp.Start(t)
	s := scenario.New(a)
	r := a.Do("POST", "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}})
	s.Set("sendOnly", r.JSON()["key"].(string))
	deny := func(method, path string, errs scenario.ErrShape) sc {
		return sc{Name: method + " " + path, Method: method, Path: path, Key: "{sendOnly}", Status: 403, Code: "insufficient_scope", Errors: errs}
	}
	s.Run(t,
		deny("GET", "/v1/contacts", scenario.Flat),
		deny("POST", "/v1/contacts", scenario.Flat),
		deny("GET", "/v1/contacts/ct_x", scenario.Flat),
		deny("GET", "/v1/contacts/duplicates", scenario.Flat),
		deny("GET", "/v1/contacts/ct_x/tags", scenario.Nested),
		deny("PATCH", "/v1/contacts/ct_x/attributes", scenario.Nested),
		deny("GET", "/v1/contacts/ct_x/subscriptions", scenario.Nested),
		deny("GET", "/v1/audiences", scenario.Nested),
		deny("POST", "/v1/audiences/aud_x/contacts", scenario.Nested),
		deny("POST", "/v1/audiences/aud_x/contacts/mem_x/confirm", scenario.Nested),
		sc{Name: "no key", Method: "GET", Path: "/v1/audiences", Key: scenario.NoKey, Status: 401, Code: "unauthorized"},
	)
	resp, err := a.Client.Get(a.URL + "/confirm/forged.link")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("forged link: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
