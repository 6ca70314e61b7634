package app

import "mailroom/internal/automations"

// wireAutomations builds the automations service, after templates and
// contacts, which it asks whether the templates and audiences a definition
// names exist. It has no workers yet (runs are not built).
func (a *App) wireAutomations(w *wiring) error {
	a.services.Automations = automations.New(a.DB, a.Clock, a.services.Templates, a.services.Contacts, a.Config.PublicURL)
	return nil
}
