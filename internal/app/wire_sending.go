package app

// wireSending builds the sending service and registers its workers.
func (a *App) wireSending(w *wiring) error { return nil }
