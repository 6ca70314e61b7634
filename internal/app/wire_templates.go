package app

import "mailroom/internal/templates"

// wireTemplates builds the templates service, before sending, which
// renders a send's template through it. It has no workers.
func (a *App) wireTemplates(w *wiring) error {
	a.services.Templates = templates.New(a.DB, a.Clock)
	return nil
}
