// Package dashboard is the web dashboard `mailroom serve` offers at / (or on
// MAILROOM_DASHBOARD_ADDR): server-rendered html/template pages embedded in
// the binary, one stylesheet and one small script of its own (copy buttons),
// no asset from anywhere else, under a strict Content-Security-Policy.
//
// A person signs in with a workspace API key, or with a one-time link that
// `mailroom dashboard link` prints; the session is a row (the cookie's hash)
// holding the key sealed, and every request authenticates that key again,
// so a revoked key ends its sessions on the next click and a session sees
// exactly what its key sees: pages call the same services, with the same
// scope checks, as the /v1 routes. Pages that only show data read without
// JavaScript; every change is a POST carrying the session's CSRF token.
package dashboard

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"mailroom/internal/delivery"

	"mailroom/internal/analytics"
	"mailroom/internal/automations"
	"mailroom/internal/broadcasts"
	"mailroom/internal/capture"
	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/domains"
	"mailroom/internal/inbound"
	"mailroom/internal/policy"
	"mailroom/internal/ratelimit"
	"mailroom/internal/requestlog"
	"mailroom/internal/secretbox"
	"mailroom/internal/segments"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
	"mailroom/internal/templates"
	"mailroom/internal/topics"
	"mailroom/internal/webhooks"
	"mailroom/internal/workspaces"
)

// Lifetimes and limits, explained in docs/decisions.md ("Dashboard").
const (
	// SessionTTL is how long a session lasts from sign-in, whatever its use.
	SessionTTL = 12 * time.Hour
	// LinkTTL is how long a printed sign-in link can be used (once).
	LinkTTL = 15 * time.Minute
	// SignInLimit is the sign-in attempts (key or link) one address may
	// make per minute.
	SignInLimit = 10
)

// Deps are what the dashboard calls: the services behind the /v1 routes.
type Deps struct {
	DB           *store.DB
	Box          *secretbox.Box
	Clock        clock.Clock
	Logger       *slog.Logger
	Limiter      ratelimit.Limiter
	PublicURL    string // MAILROOM_PUBLIC_URL: https makes the cookie Secure
	Workspaces   *workspaces.Service
	Sending      *sending.Service
	Delivery     *delivery.Service // an email's attempts
	Domains      *domains.Service
	Webhooks     *webhooks.Service
	Suppressions *suppressions.Service
	Analytics    *analytics.Service
	Policy       *policy.Service
	Inbound      *inbound.Service
	Contacts     *contacts.Service
	Segments     *segments.Service
	Topics       *topics.Service
	Templates    *templates.Service
	Broadcasts   *broadcasts.Service
	Automations  *automations.Service
	RequestLogs  *requestlog.Service
	Capture      *capture.Service // captured mail (MAILROOM_OUTBOUND=capture); nil when mail is sent
}

// Dashboard serves the pages.
type Dashboard struct {
	d      Deps
	log    *slog.Logger
	secure bool // cookies carry Secure
	pages  pages
}

// New builds the dashboard.
func New(d Deps) *Dashboard {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	return &Dashboard{d: d, log: d.Logger, secure: strings.HasPrefix(d.PublicURL, "https://"), pages: parsePages()}
}

// Register adds the dashboard's routes (routes.go) to mux, beside the API's.
func (x *Dashboard) Register(mux *http.ServeMux) { x.routes(mux) }

// Handler is the dashboard alone, for its own listener: what it does not
// serve answers its not-found page.
func (x *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	x.routes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { x.notFound(w, r) })
	return mux
}
