package app

import (
	"net/http"
	"time"

	"mailroom/internal/httpapi"
)

// newMetricsServer serves /metrics on MAILROOM_METRICS_ADDR, so that the
// scrape need not share the API's (public) listener; nil when /metrics
// stays on the API listener. The address is the access control; a token,
// when set, is asked here too.
func (a *App) newMetricsServer() *sideServer {
	if a.Config.MetricsAddr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", httpapi.MetricsHandler(a.Registry, httpapi.MetricsAccess{Token: a.Config.MetricsToken}))
	return &sideServer{setting: "MAILROOM_METRICS_ADDR", addr: a.Config.MetricsAddr, log: a.Log,
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second}}
}

// MetricsAddr is /metrics' own listener's address ("" when it is on the
// API's).
func (a *App) MetricsAddr() string { return a.metricsSrv.address() }
