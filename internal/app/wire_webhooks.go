package app

// wireWebhooks builds the webhooks service and registers its workers.
func (a *App) wireWebhooks(w *wiring) error { return nil }
