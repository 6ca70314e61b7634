package app

import (
	"mailroom/internal/analytics"
	"mailroom/internal/sending"
	"mailroom/internal/tracking"
)

// wireTracking builds open and click tracking and the analytics reads,
// after sending (whose counters the recorder moves) and before delivery
// (which rewrites tracked mail through w.links). The recorder runs as a
// background part, stopped after the HTTP server so the last counts are
// written.
func (a *App) wireTracking(w *wiring) error {
	signer := tracking.Signer{Box: a.Box}
	svc := tracking.New(tracking.Config{
		DB: a.DB, Clock: a.Clock, Log: a.Log.With("component", "tracking"),
		Signer: signer, Counter: a.services.Sending,
		Booking: sending.TrackingBooking, // a broadcast's emails book late (00125)
	})
	var host tracking.HostLookup
	if a.services.Domains != nil {
		host = a.services.Domains.TrackingHost
	}
	w.links = tracking.NewLinks(signer, a.Config.PublicURL, host)
	a.services.Tracking = svc
	if a.services.Sending != nil {
		a.services.Sending.SetEngager(tracking.Engager{Service: svc, Links: w.links}) // opened@ and clicked@
	}
	a.services.Analytics = analytics.New(a.DB, a.Clock)
	a.background = append(a.background, svc)
	return nil
}

// Tracking is the node's open and click recorder.
func (a *App) Tracking() *tracking.Service { return a.services.Tracking }
