package httpapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOpenAPICoversEveryRoute reads every route registration in this
// package's source and checks the served document describes it, so a route
// cannot be added without its documentation (the end-to-end tests then check
// the responses against it).
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
	files, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`mux\.HandleFunc\("([A-Z]+) (/v1/[^"]*)"`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			method, path := strings.ToLower(m[1]), m[2]
			n++
			ops, ok := doc.Paths[path]
			if !ok {
				t.Errorf("%s %s (%s) is not in the OpenAPI document", m[1], path, f)
				continue
			}
			if _, ok := ops[method]; !ok {
				t.Errorf("%s %s (%s) has no %s operation in the OpenAPI document", m[1], path, f, method)
			}
		}
	}
	if n < 30 {
		t.Fatalf("found only %d routes; the pattern no longer matches the code", n)
	}
}
