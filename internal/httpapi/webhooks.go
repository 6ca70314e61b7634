package httpapi

import "net/http"

// webhooksRoutes registers the /v1/webhooks routes.
func (h *handler) webhooksRoutes(mux *http.ServeMux) {}
