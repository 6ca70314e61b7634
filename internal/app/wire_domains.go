package app

// wireDomains builds the domains service and registers its workers.
func (a *App) wireDomains(w *wiring) error { return nil }
