package app

import (
	"mailroom/internal/requestlog"
)

// wireRequestLog builds the request log's service and, unless
// MAILROOM_RETAIN_REQUEST_LOGS is 0, its batch writer: a background part
// that stops after the HTTP server, so the last calls are written.
func (a *App) wireRequestLog(w *wiring) error {
	a.services.RequestLogs = requestlog.New(a.DB, a.Clock)
	if a.Config.Retention.RequestLogs > 0 {
		a.requestLog = requestlog.NewWriter(a.DB, a.Registry, a.Log.With("component", "requestlog"))
		a.background = append(a.background, a.requestLog)
	}
	return nil
}
