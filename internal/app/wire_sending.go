package app

import (
	"github.com/riverqueue/river"

	"mailroom/internal/sending"
)

// wireSending builds the sending service and registers its workers: the
// test-address simulator, complained@'s delayed complaint, the scenario
// addresses' later steps, the
// every-second promotion of due scheduled emails and the hourly pass that
// forgets expired idempotency keys. The service's group
// committer runs as a background part, stopped after the HTTP server so
// that every answered send has committed.
func (a *App) wireSending(w *wiring) error {
	svc := sending.New(sending.Config{
		DB:            a.DB,
		Clock:         a.Clock,
		ServiceDomain: a.Config.ServiceDomain,
		Workspaces:    a.Workspaces,
		Logger:        a.Log.With("component", "sending"),
		Registry:      a.Registry,
		Templates:     a.services.Templates,
		Topics:        a.services.Topics,
		Policy:        a.services.Policy,
		Meter:         a.Meter,
	})
	if a.services.Domains != nil {
		svc.SetDomains(a.services.Domains)
	}
	a.services.Sending = svc
	if a.services.Inbound != nil {
		a.services.Inbound.SetSender(svc) // POST /v1/messages sends through it
		svc.SetScheduleWatcher(a.services.Inbound.ScheduleChanged)
		svc.SetMailboxes(a.services.Inbound) // autoreply@'s replies arrive in the sender's mailbox
	}
	river.AddWorker(w.workers, &sending.ComplainWorker{S: svc})
	river.AddWorker(w.workers, &sending.ScenarioWorker{S: svc})
	river.AddWorker(w.workers, &sending.CleanupWorker{S: svc})
	w.periodic = append(w.periodic, sending.CleanupPeriodic())
	a.background = append(a.background, svc)
	return nil
}

// Sending is the node's sending service (tests install a Domains lookup
// through it until the domains area is wired).
func (a *App) Sending() *sending.Service { return a.services.Sending }
