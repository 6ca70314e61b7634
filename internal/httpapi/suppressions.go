package httpapi

import "net/http"

// suppressionsRoutes registers the /v1/suppressions routes.
func (h *handler) suppressionsRoutes(mux *http.ServeMux) {}
