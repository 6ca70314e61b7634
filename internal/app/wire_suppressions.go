package app

// wireSuppressions builds the suppressions service and registers its workers.
func (a *App) wireSuppressions(w *wiring) error { return nil }
