package app

import (
	"mailroom/internal/events"
	"mailroom/internal/inbound"
	"mailroom/internal/webhooks"
)

// wireWebhooks builds the webhooks service. It is both the API's service
// and a background part: the dispatcher (event log -> delivery rows) and
// the delivery pool run from Start to Stop.
func (a *App) wireWebhooks(w *wiring) error {
	svc := webhooks.New(webhooks.Options{
		DB:           a.DB,
		Clock:        a.Clock,
		Box:          a.Box,
		Log:          a.Log.With("component", "webhooks"),
		AllowPrivate: a.Config.WebhookAllowPrivate,
		Concurrency:  a.Config.WebhookConcurrency,
		Node:         a.node.id,
		Registry:     a.Registry,
		SentFrom:     inbound.SentFrom, // owns mailboxes, and reads emails through sending
		Meter:        a.Meter,
		LogRetention: a.Config.Retention.WebhookLogs,
	})
	a.services.Webhooks = svc
	// events settles which raised events need fan-out by asking webhooks,
	// which owns the endpoints (and imports events).
	events.UseListeners(webhooks.Listening)
	a.background = append(a.background, svc)
	return nil
}

// Webhooks is the node's webhooks service (tests shorten its timeout and
// kick it after moving a fake clock).
func (a *App) Webhooks() *webhooks.Service { return a.services.Webhooks }
