package app

import "mailroom/internal/suppressions"

// wireSuppressions builds the suppressions service. It has no workers: rows
// are added by the API, by bounce and complaint handling in other areas
// (suppressions.AddTx in their transactions) and by the operator command.
func (a *App) wireSuppressions(w *wiring) error {
	a.services.Suppressions = suppressions.New(a.DB, a.Clock)
	return nil
}
