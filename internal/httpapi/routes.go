package httpapi

import (
	"net/http"

	"mailroom/internal/apierr"
	"mailroom/internal/domains"
	"mailroom/internal/sending"
	"mailroom/internal/suppressions"
	"mailroom/internal/webhooks"
	"mailroom/internal/workspaces"
)

// Services are the domain services behind the routes, filled in by app.
type Services struct {
	Sending      *sending.Service
	Domains      *domains.Service
	Webhooks     *webhooks.Service
	Suppressions *suppressions.Service
}

func errNoRoute() error {
	return apierr.New(http.StatusNotFound, "not_found", "No such route.").WithNext("See /v1/openapi.json for the routes this server offers.")
}

// Scope decisions where the spec says "not shown" are in docs/decisions.md:
// mail:send covers the emails routes (a send-only key reads the status of
// what it sent), mail:read the received-mail routes, workspace everything else.
const (
	send = workspaces.ScopeSend
	read = workspaces.ScopeRead
	ws   = workspaces.ScopeWorkspace
)

// routes lists every /v1 route on one screen.
func (h *handler) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/openapi.json", h.openapi)

	mux.HandleFunc("GET /v1/api-keys", scoped(ws, h.listAPIKeys))
	mux.HandleFunc("POST /v1/api-keys", scoped(ws, h.createAPIKey))
	mux.HandleFunc("DELETE /v1/api-keys/{id}", scoped(ws, h.deleteAPIKey))

	// Each resource lists its routes at the top of its own file.
	h.emailsRoutes(mux)
	h.domainsRoutes(mux)
	h.webhooksRoutes(mux)
	h.suppressionsRoutes(mux)

	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) { writeError(w, r, errNoRoute()) })
}
