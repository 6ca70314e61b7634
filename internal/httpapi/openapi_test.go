package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOpenAPICoversEveryRoute walks the route table of routes.go and checks
// the served document describes every route, so a route cannot be added
// without its documentation (the end-to-end tests then check the responses
// against it).
func TestOpenAPICoversEveryRoute(t *testing.T) {
	b, err := OpenAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	table := &routeTable{mux: http.NewServeMux()}
	(&handler{}).routes(table)
	for _, rt := range table.routes {
		m, path, ok := strings.Cut(rt.pattern, " ")
		if !ok || !strings.HasPrefix(path, "/v1/") {
			t.Errorf("route %q: want \"METHOD /v1/...\"", rt.pattern)
			continue
		}
		ops, ok := doc.Paths[path]
		if !ok {
			t.Errorf("%s is not in the OpenAPI document", rt.pattern)
			continue
		}
		if _, ok := ops[strings.ToLower(m)]; !ok {
			t.Errorf("%s has no %s operation in the OpenAPI document", rt.pattern, strings.ToLower(m))
		}
	}
	if len(table.routes) < 30 {
		t.Fatalf("found only %d routes", len(table.routes))
	}
}
