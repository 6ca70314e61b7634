// Package openapicheck validates real HTTP responses against the served
// OpenAPI document. testapp runs it on every response an end-to-end test
// receives, so a route missing from the document, or a response that does
// not match its schema, fails the test that saw it.
package openapicheck

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"mailroom/internal/httpapi"
)

var load = sync.OnceValues(func() (routers.Router, error) {
	// The contacts export answers a .vcf, text like text/plain.
	openapi3filter.RegisterBodyDecoder("text/vcard", openapi3filter.PlainBodyDecoder)
	// Automation YAML (GET/PUT /v1/automations/{id}.yaml) is text as stored.
	openapi3filter.RegisterBodyDecoder("text/yaml", openapi3filter.PlainBodyDecoder)
	// A captured message's bytes (GET /v1/captured-emails/{id}/raw).
	openapi3filter.RegisterBodyDecoder("message/rfc822", openapi3filter.PlainBodyDecoder)
	b, err := httpapi.OpenAPIDocument()
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return legacy.NewRouter(doc)
})

// Document loads and validates the merged document.
func Document() error {
	_, err := load()
	return err
}

// Check validates one exchange. Paths outside /v1 (health, metrics) and the
// responses of the rate limiter and unknown routes are not described per
// route and are skipped.
func Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if !strings.HasPrefix(req.URL.Path, "/v1/") {
		return
	}
	router, err := load()
	if err != nil {
		t.Fatalf("openapi: document does not load: %v", err)
	}
	// The router matches on the server URL "/", so a host-less URL is used.
	u := *req.URL
	u.Scheme, u.Host = "", ""
	r2 := req.Clone(context.Background())
	r2.URL = &u
	r2.Host = ""
	route, params, err := router.FindRoute(r2)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusTooManyRequests || status == http.StatusUnauthorized {
			return
		}
		t.Errorf("openapi: %s %s answered %d but is not in the OpenAPI document: %v", req.Method, req.URL.Path, status, err)
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request: r2, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, ExcludeRequestBody: true},
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("openapi: %s %s -> %d does not match the document: %v\nbody: %.500s", req.Method, req.URL.Path, status, err, body)
	}
}
