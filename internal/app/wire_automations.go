package app

import (
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/automations"
	"mailroom/internal/jobs"
	"mailroom/internal/render"
)

// wireAutomations builds the automations service, after templates,
// contacts and sending (which it checks definitions against and runs
// steps through), registers its run worker on its own queue, and runs the
// consumer of the contacts area's automation events.
func (a *App) wireAutomations(w *wiring) error {
	svc := automations.New(automations.Config{DB: a.DB, Clock: a.Clock, Templates: a.services.Templates, Contacts: a.services.Contacts,
		Sending: a.services.Sending, PublicURL: a.Config.PublicURL, AllowPrivate: a.Config.WebhookAllowPrivate,
		Log: a.Log.With("component", "automations"), Registry: a.Registry, Box: a.Box, Links: func(ws, topic, email string) render.Links { return a.mailLinks(ws, topic, email, a.Clock.Now()) }})
	a.services.Automations = svc
	// An import queues only the contact events an automation starts on.
	a.services.Contacts.SetListened(automations.ListenedEvents)
	river.AddWorker(w.workers, &automations.Worker{Service: svc})
	if w.queues == nil {
		w.queues = map[string]river.QueueConfig{}
	}
	w.queues[jobs.QueueAutomations] = river.QueueConfig{MaxWorkers: 50}
	a.background = append(a.background, svc, automations.NewConsumer(svc, a.Log.With("component", "automations"), 500*time.Millisecond))
	return nil
}

// Automations is the node's automations service.
func (a *App) Automations() *automations.Service { return a.services.Automations }
