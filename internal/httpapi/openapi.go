package httpapi

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"sync"
)

// The OpenAPI 3.1 document is kept as one fragment per resource in
// openapi/*.json ({paths, components}); they are merged once at start. Tests
// validate every real response against the merged document, so it cannot
// drift from the code, and a route missing from it fails the tests.
//
//go:embed openapi/*.json
var openapiFS embed.FS

var openapiOnce = sync.OnceValues(buildOpenAPI)

// OpenAPIDocument returns the merged document.
func OpenAPIDocument() ([]byte, error) { return openapiOnce() }

func buildOpenAPI() ([]byte, error) {
	names, err := fs.Glob(openapiFS, "openapi/*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	doc := map[string]any{}
	for _, n := range names {
		b, err := openapiFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var frag map[string]any
		if err := json.Unmarshal(b, &frag); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if err := merge(doc, frag, n); err != nil {
			return nil, err
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}

// merge deep-merges src into dst; two fragments defining the same leaf is a
// mistake worth failing on.
func merge(dst, src map[string]any, where string) error {
	for k, v := range src {
		cur, ok := dst[k]
		if !ok {
			dst[k] = v
			continue
		}
		cm, ok1 := cur.(map[string]any)
		vm, ok2 := v.(map[string]any)
		if !ok1 || !ok2 {
			return fmt.Errorf("openapi: %s redefines %q", where, k)
		}
		if err := merge(cm, vm, where); err != nil {
			return err
		}
	}
	return nil
}

func (h *handler) openapi(w http.ResponseWriter, r *http.Request) error {
	doc, err := OpenAPIDocument()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
	return nil
}
