package httpapi

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"

	"mailroom/internal/tracing"
	"mailroom/internal/workspaces"
)

// errShape is the error body a route answers; the spec gives each route
// family one of two ("Errors / Body shapes").
type errShape uint8

const (
	nested errShape = iota // { error: { code, message, next } }
	flat                   // { error: <code>, message, hint? }
)

// handlerFunc is what every handler is: it writes the answer, or returns the
// error that writeError turns into the route's error shape.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route is one line of routes.go. The mux holds it as the handler, so the
// middleware that runs before the handler (auth, rate limit) finds the
// route's error shape in the match too.
type route struct {
	pattern string
	grant   workspaces.Grant // no scopes: no key needed
	shape   errShape
	known   bool // false for the not_found answer of an unknown route
	fn      handlerFunc
}

func (rt *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, span := tracing.Server(r.Context(), propagation.HeaderCarrier(r.Header), rt.pattern)
	defer span.End()
	r = r.WithContext(ctx)
	if len(rt.grant.Scopes) > 0 {
		k := apiKey(r)
		if k == nil {
			writeError(w, r, workspaces.ErrBadKey)
			return
		}
		if scope, bound := k.Denied(rt.grant); scope != "" {
			writeError(w, r, errScope(scope))
			return
		} else if bound {
			writeError(w, r, errBound(k.MailboxID))
			return
		}
	}
	if err := rt.fn(w, r); err != nil {
		writeError(w, r, err)
	}
}

// routeTable registers routes on a mux and keeps the list (the OpenAPI
// coverage test reads it).
type routeTable struct {
	mux    *http.ServeMux
	routes []*route
}

// handle registers one route.
func (t *routeTable) handle(pattern string, g workspaces.Grant, shape errShape, fn handlerFunc) {
	rt := &route{pattern: pattern, grant: g, shape: shape, known: true, fn: fn}
	t.routes = append(t.routes, rt)
	t.mux.Handle(pattern, rt)
}

// unknown makes every path under prefix that no route matches (whatever
// the method) answer not_found in shape.
func (t *routeTable) unknown(prefix string, shape errShape) {
	rt := &route{pattern: prefix, grant: public, shape: shape, fn: func(http.ResponseWriter, *http.Request) error { return errNoRoute() }}
	t.mux.Handle(prefix, rt)
	if !strings.HasSuffix(prefix, "/") {
		t.mux.Handle(prefix+"/", rt)
	}
}

// matchedRoute returns the route mux would serve r with, or nil.
func matchedRoute(mux *http.ServeMux, r *http.Request) *route {
	h, _ := mux.Handler(r)
	rt, _ := h.(*route)
	return rt
}
