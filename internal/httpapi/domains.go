package httpapi

import "net/http"

// domainsRoutes registers the /v1/domains routes.
func (h *handler) domainsRoutes(mux *http.ServeMux) {}
