package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"mailroom/internal/httpapi"
)

// metricsServer serves /metrics on MAILROOM_METRICS_ADDR, when it is set,
// so that the scrape need not share the API's (public) listener.
type metricsServer struct {
	addr string
	h    http.Handler
	srv  *http.Server
	ln   net.Listener
	log  interface{ Error(string, ...any) }
}

// newMetricsServer is nil when /metrics stays on the API listener. The
// address is the access control; a token, when set, is asked here too.
func (a *App) newMetricsServer() *metricsServer {
	if a.Config.MetricsAddr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", httpapi.MetricsHandler(a.Registry, httpapi.MetricsAccess{Token: a.Config.MetricsToken}))
	return &metricsServer{addr: a.Config.MetricsAddr, h: mux, log: a.Log}
}

func (m *metricsServer) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return fmt.Errorf("listening on MAILROOM_METRICS_ADDR %s: %w", m.addr, err)
	}
	m.ln = ln
	m.srv = &http.Server{Handler: m.h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics server stopped", "err", err)
		}
	}()
	return nil
}

func (m *metricsServer) Stop(ctx context.Context) error {
	if m.srv == nil {
		return nil
	}
	return m.srv.Shutdown(ctx)
}

// MetricsAddr is /metrics' own listener's address ("" when it is on the
// API's).
func (a *App) MetricsAddr() string {
	if a.metricsSrv == nil || a.metricsSrv.ln == nil {
		return ""
	}
	return a.metricsSrv.ln.Addr().String()
}
