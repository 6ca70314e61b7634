package app

import (
	"mailroom/internal/dnsresolve"
	"mailroom/internal/policy"
)

// wirePolicy builds the sending policy (quotas, caps, throttles, pauses,
// dedicated IPs) before sending, which asks it about every send. It is a
// background part started before sending and stopped after it, so that the
// counts of the last answered sends are flushed.
func (a *App) wirePolicy(w *wiring) error {
	svc := policy.New(policy.Config{
		DB: a.DB, Clock: a.Clock, Logger: a.Log.With("component", "policy"), Settings: a.Config.Policy,
		Resolver: dnsresolve.New(a.Config.DNSResolver), HeloName: a.Config.HeloName, SharedIPs: a.Config.OutboundIPs,
	})
	a.services.Policy = svc
	a.background = append(a.background, svc)
	return nil
}

// Policy is the node's sending policy.
func (a *App) Policy() *policy.Service { return a.services.Policy }
