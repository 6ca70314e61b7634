package app

import (
	"context"

	"mailroom/internal/topics"
)

// wireTopics builds the topics service, before sending, which checks a
// send's topic through it. Its "unsubscribe from all" reaches the contacts
// service, built later, through lateContacts. It has no workers.
func (a *App) wireTopics(w *wiring) error {
	a.services.Topics = topics.New(a.DB, a.Clock, topics.LinkConfig{
		Box:                a.Box,
		PublicURL:          a.Config.PublicURL,
		UnsubscribeAddress: topics.UnsubscribeLocalPart + "@" + a.Config.ServiceDomain,
	}, lateContacts{a})
	return nil
}

// lateContacts reaches the contacts service once it is built.
type lateContacts struct{ a *App }

func (l lateContacts) UnsubscribeEverywhere(ctx context.Context, workspaceID, email string) (int, error) {
	if l.a.services.Contacts == nil {
		return 0, nil
	}
	return l.a.services.Contacts.UnsubscribeEverywhere(ctx, workspaceID, email)
}

// Topics is the node's topics service (tests make links with it).
func (a *App) Topics() *topics.Service { return a.services.Topics }
