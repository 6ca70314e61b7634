package app

import (
	"mailroom/internal/domains"
	"mailroom/internal/events"
	"mailroom/internal/inbound"
)

// wireInbound builds the receiving side: mailboxes (domains counts them
// before deleting a domain), the default mailbox of every new workspace.
func (a *App) wireInbound(w *wiring) error {
	svc := inbound.New(inbound.Config{
		DB: a.DB, Clock: a.Clock, Log: a.Log.With("component", "inbound"),
		Domains: a.services.Domains, Workspaces: a.Workspaces,
		ServiceDomain: a.Config.ServiceDomain, PublicURL: a.Config.PublicURL,
		Resolver: domains.NewResolver(a.Config.DNSResolver), Registry: a.Registry,
	})
	a.services.Domains.SetMailboxes(svc)
	a.services.Inbound = svc
	a.background = append(a.background, svc) // its committer: received mail shares commits
	a.Workspaces.OnCreate(svc.Provision)
	// email.received names its message; its payload is rebuilt when read.
	events.UseResolver(events.EmailReceived, inbound.ResolveReceived)
	return nil
}

// Inbound is the node's inbound service (for tests).
func (a *App) Inbound() *inbound.Service { return a.services.Inbound }
