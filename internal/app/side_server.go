package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
)

// sideServer serves one handler on a listener of its own beside the API's:
// the dashboard on MAILROOM_DASHBOARD_ADDR, /metrics on MAILROOM_METRICS_ADDR.
// It is a background part (Start, Stop).
type sideServer struct {
	setting string       // the address's setting, for the start error
	addr    string       // where to listen
	srv     *http.Server // its handler and timeouts
	ln      net.Listener
	log     *slog.Logger
}

func (s *sideServer) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listening on %s %s: %w", s.setting, s.addr, err)
	}
	s.ln = ln
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("server stopped", "setting", s.setting, "err", err)
		}
	}()
	return nil
}

func (s *sideServer) Stop(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}

// address is where it listens ("" when it is nil or not started).
func (s *sideServer) address() string {
	if s == nil || s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}
