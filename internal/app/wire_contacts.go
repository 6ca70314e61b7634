package app

import "mailroom/internal/contacts"

// wireContacts builds the contacts and audiences service. It has no workers
// yet: its automation events wait for the automations area.
func (a *App) wireContacts(w *wiring) error {
	a.services.Contacts = contacts.New(a.DB, a.Clock)
	return nil
}
