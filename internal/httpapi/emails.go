package httpapi

import "net/http"

// emailsRoutes registers the /v1/emails routes.
func (h *handler) emailsRoutes(mux *http.ServeMux) {}
