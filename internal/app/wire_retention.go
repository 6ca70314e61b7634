package app

import (
	"context"

	"mailroom/internal/delivery"

	"github.com/riverqueue/river"

	"mailroom/internal/capture"
	"mailroom/internal/events"
	"mailroom/internal/inbound"
	"mailroom/internal/requestlog"
	"mailroom/internal/retention"
	"mailroom/internal/sending"
)

// wireRetention registers the hourly purge of bodies, events, raw
// received messages and the request log past their MAILROOM_RETAIN_* settings.
func (a *App) wireRetention(w *wiring) error {
	r := a.Config.Retention
	a.retention = &retention.Worker{DB: a.DB, Clock: a.Clock, Meter: a.Meter, Log: a.Log.With("component", "retention"),
		Kinds: []retention.Kind{
			{Name: "bodies", Keep: r.Bodies, Purge: sending.PurgeBodies},
			{Name: "captured", Keep: r.Bodies, Purge: capture.Purge}, // mailroom dev's captured mail, kept as long as bodies
			{Name: "events", Keep: r.Events, Purge: events.Purge},
			{Name: "attempts", Keep: r.Events, Purge: delivery.PurgeAttempts}, // an email's story, kept as long as its timeline
			{Name: "received", Keep: r.Received, Purge: inbound.PurgeRaw},
			{Name: "request_logs", Keep: r.RequestLogs, Purge: requestlog.Purge},
		}}
	river.AddWorker(w.workers, a.retention)
	w.periodic = append(w.periodic, retention.Periodic())
	return nil
}

// PurgeNow runs one retention pass at once (tests; the hourly job does the
// same).
func (a *App) PurgeNow(ctx context.Context) (map[string]int64, error) {
	return a.retention.Run(ctx)
}
