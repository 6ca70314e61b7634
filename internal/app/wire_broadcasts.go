package app

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/broadcasts"
	"mailroom/internal/jobs"
	"mailroom/internal/render"
	"mailroom/internal/sending"
)

// wireBroadcasts builds the broadcasts service over contacts, segments,
// templates and sending, and registers its fan-out worker on the
// broadcasts queue: so many broadcasts send at once on a node, the rest
// wait their turn.
func (a *App) wireBroadcasts(w *wiring) error {
	svc := broadcasts.New(broadcasts.Config{
		DB: a.DB, Clock: a.Clock, Contacts: a.services.Contacts, Segments: a.services.Segments, Templates: a.services.Templates,
		Sending: a.services.Sending, Domains: a.services.Domains, Topics: a.services.Topics, Box: a.Box, PublicURL: a.Config.PublicURL, ServiceDomain: a.Config.ServiceDomain,
		Links: a.mailLinks,
	})
	a.services.Broadcasts = svc
	a.services.Sending.SetBodySource(svc)
	river.AddWorker(w.workers, &broadcasts.Worker{Service: svc})
	if w.queues == nil {
		w.queues = map[string]river.QueueConfig{}
	}
	w.queues[jobs.QueueBroadcasts] = river.QueueConfig{MaxWorkers: 16}
	return nil
}

// mailLinks are a recipient's personal links in marketing mail, broadcast
// or automation send: the topics area's, read when a message is rendered.
func (a *App) mailLinks(ws, topic, email string, at time.Time) render.Links {
	l := a.services.Topics.LinksAt(ws, topic, email, at)
	return render.Links{Unsubscribe: l.Unsubscribe, Preferences: l.Preferences, ListUnsubscribe: l.ListUnsubscribe}
}

// broadcastBodies renders a broadcast recipient's body for delivery, which
// is wired before the broadcasts area.
type broadcastBodies struct{ a *App }

func (b broadcastBodies) Body(ctx context.Context, ws, source string, at time.Time) (sending.Body, error) {
	return b.a.services.Broadcasts.Body(ctx, ws, source, at)
}

// Bodies reads the rows of a delivery batch's bodies in one query.
func (b broadcastBodies) Bodies(ctx context.Context, ws string, sources []string) (map[string]sending.RenderBody, error) {
	return b.a.services.Broadcasts.Bodies(ctx, ws, sources)
}

// Broadcasts is the node's broadcasts service (tests run a fan-out directly).
func (a *App) Broadcasts() *broadcasts.Service { return a.services.Broadcasts }
