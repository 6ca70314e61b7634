package app

import (
	"github.com/riverqueue/river"

	"mailroom/internal/dashboard"
	"mailroom/internal/ratelimit"
)

// newDashboard builds the dashboard over the services the API calls; nil
// when MAILROOM_DASHBOARD_ADDR is off.
func (a *App) newDashboard(limiter ratelimit.Limiter) *dashboard.Dashboard {
	if a.Config.DashboardAddr == "off" {
		return nil
	}
	return dashboard.New(a.dashboardDeps(limiter))
}

// wireDashboard registers the worker of the dashboard's CSV imports (also
// when this node serves no dashboard: another node's upload may run here).
func (a *App) wireDashboard(w *wiring) error {
	river.AddWorker(w.workers, &dashboard.ImportWorker{DB: a.DB, Contacts: a.services.Contacts, Clock: a.Clock, Log: a.Log.With("component", "dashboard")})
	return nil
}

// dashboardDeps are the dashboard's services (also `mailroom dashboard link`'s).
func (a *App) dashboardDeps(limiter ratelimit.Limiter) dashboard.Deps {
	s := a.services
	return dashboard.Deps{DB: a.DB, Box: a.Box, Clock: a.Clock, Logger: a.Log.With("component", "dashboard"), Limiter: limiter,
		PublicURL: a.Config.PublicURL, Workspaces: a.Workspaces, Sending: s.Sending, Delivery: s.Delivery, Domains: s.Domains, Webhooks: s.Webhooks,
		Suppressions: s.Suppressions, Analytics: s.Analytics, Policy: s.Policy, Inbound: s.Inbound,
		Contacts: s.Contacts, Segments: s.Segments, Topics: s.Topics, Templates: s.Templates, Broadcasts: s.Broadcasts, Automations: s.Automations,
		RequestLogs: s.RequestLogs, Capture: s.Capture}
}

// DashboardAddr is the dashboard's own listener's address ("" when it
// shares the API's).
func (a *App) DashboardAddr() string { return a.dashboardSrv.address() }
