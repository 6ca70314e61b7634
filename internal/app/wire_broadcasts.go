package app

import (
	"github.com/riverqueue/river"

	"mailroom/internal/broadcasts"
	"mailroom/internal/jobs"
	"mailroom/internal/render"
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
	river.AddWorker(w.workers, &broadcasts.Worker{Service: svc})
	if w.queues == nil {
		w.queues = map[string]river.QueueConfig{}
	}
	w.queues[jobs.QueueBroadcasts] = river.QueueConfig{MaxWorkers: 16}
	return nil
}

// mailLinks are a recipient's personal links in marketing mail, broadcast
// or automation send: the topics area's, read when a message is rendered.
func (a *App) mailLinks(ws, topic, email string) render.Links {
	l := a.services.Topics.Links(ws, topic, email)
	return render.Links{Unsubscribe: l.Unsubscribe, Preferences: l.Preferences, ListUnsubscribe: l.ListUnsubscribe}
}

// Broadcasts is the node's broadcasts service (tests run a fan-out directly).
func (a *App) Broadcasts() *broadcasts.Service { return a.services.Broadcasts }
