package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"mailroom/internal/rules"
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

// TestOpenAPIRuleEnums: the segment rule schema lists the rule evaluator's
// own fields and ops, so neither can drift from what the API accepts.
func TestOpenAPIRuleEnums(t *testing.T) {
	b, err := OpenAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				SegmentRule struct {
					Properties struct {
						Field struct {
							AnyOf []struct {
								Enum []string `json:"enum"`
							} `json:"anyOf"`
						} `json:"field"`
						Op struct {
							Enum []string `json:"enum"`
						} `json:"op"`
					} `json:"properties"`
				} `json:"SegmentRule"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	p := doc.Components.Schemas.SegmentRule.Properties
	if len(p.Field.AnyOf) == 0 || !slices.Equal(p.Field.AnyOf[0].Enum, rules.Fields) {
		t.Errorf("SegmentRule.field enum %v, want %v", p.Field.AnyOf, rules.Fields)
	}
	if !slices.Equal(p.Op.Enum, rules.Ops) {
		t.Errorf("SegmentRule.op enum %v, want %v", p.Op.Enum, rules.Ops)
	}
	for _, f := range rules.Fields {
		if _, err := rules.Parse("all", []rules.Rule{{Field: f, Op: "bogus"}}, true); err == nil || strings.Contains(err.Error(), "unknown field") {
			t.Errorf("field %s is listed but not known to the evaluator: %v", f, err)
		}
	}
}
