package app

import (
	"context"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/segments"
	"mailroom/internal/topics"
)

// wireContacts builds the contacts and audiences service. It has no workers
// yet: its automation events wait for the automations area. Confirmations
// go through the sending service, from the workspace's sender.
func (a *App) wireContacts(w *wiring) error {
	c := contacts.New(a.DB, a.Clock)
	c.SetConfirm(contacts.ConfirmConfig{Mailer: a.services.Sending, Box: a.Box, PublicURL: a.Config.PublicURL, From: a.confirmationSender})
	c.SetTopics(a.services.Topics.SubscribedKeys)
	a.services.Contacts = c
	a.services.Segments = segments.New(a.DB, a.Clock, c)
	a.services.Segments.SetOptedOut(a.optedOutTopics)
	return nil
}

// optedOutTopics lists the topics (ids and keys) an address is not
// subscribed to, for a segment's rule `topic` evaluated on one contact.
func (a *App) optedOutTopics(ctx context.Context, workspaceID, email string) ([]string, error) {
	return topics.OptedOut(ctx, a.DB, workspaceID, email)
}

// Contacts is the contacts and audiences service.
func (a *App) Contacts() *contacts.Service { return a.services.Contacts }

// confirmationSender is the workspace's sender for confirmations: noreply@
// its first verified custom domain, else its own subdomain.
func (a *App) confirmationSender(ctx context.Context, workspaceID string) (string, error) {
	ds, err := a.services.Domains.List(ctx, workspaceID)
	if err != nil {
		return "", err
	}
	from := ""
	for _, d := range ds {
		if d.Status != "verified" {
			continue
		}
		if from == "" || !d.Shared {
			from = "noreply@" + d.Name
		}
		if !d.Shared {
			break
		}
	}
	if from == "" {
		return "", apierr.Invalid422("domain_not_verified", "The workspace has no verified domain to send the confirmation from.")
	}
	return from, nil
}
