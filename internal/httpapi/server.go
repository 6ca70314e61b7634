// Package httpapi is the HTTP face of Mailroom: routes.go lists every route;
// each resource has its own file whose handlers decode, validate, call the
// service and encode, nothing more. Error shapes, authentication, scopes,
// rate limits and pagination are shared here so no handler repeats them.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/clock"
	"mailroom/internal/ratelimit"
	"mailroom/internal/requestlog"
	"mailroom/internal/secretbox"
	"mailroom/internal/workspaces"
)

// Deps are the services the API calls.
type Deps struct {
	Workspaces     *workspaces.Service
	Limiter        ratelimit.Limiter
	KeyLimit       int
	AnonymousLimit int
	Box            *secretbox.Box
	Clock          clock.Clock
	Logger         *slog.Logger
	LogRequests    bool
	Registry       *prometheus.Registry
	Ready          func(ctx context.Context) error
	// Storage, when it answers an error (apierr.StorageFull), refuses the
	// /v1 requests that would write (POST, PUT, PATCH); reads and deletes
	// go on. Nil: never.
	Storage  func() error
	Services Services
	// RequestLog, when set, is handed every /v1 call made with a key, after
	// its answer (internal/requestlog.Writer); nil keeps no log.
	RequestLog interface{ Record(requestlog.Entry) }
	// Pages, when set, registers the dashboard's routes on the root mux
	// (internal/dashboard), beside the API's.
	Pages interface{ Register(mux *http.ServeMux) }
	// PublicURL is the node's public base URL, for the absolute links an
	// answer carries (a sent attachment's download_url).
	PublicURL string
	// Metrics says who may read /metrics here; MetricsElsewhere leaves it
	// to a listener of its own (MAILROOM_METRICS_ADDR): 404 here.
	Metrics          MetricsAccess
	MetricsElsewhere bool
	// StreamWriteTimeout bounds each write to an event stream: a client
	// that reads slower is dropped (MAILROOM_STREAM_WRITE_TIMEOUT); 0: 10s.
	StreamWriteTimeout time.Duration
}

type handler struct {
	d           Deps
	log         *slog.Logger
	logRequests bool
	metrics     *metrics
	pager       pager
}

// NewHandler builds the http.Handler for the whole service.
func NewHandler(d Deps) http.Handler {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	h := &handler{d: d, log: d.Logger, logRequests: d.LogRequests, metrics: newMetrics(d.Registry), pager: pager{box: d.Box}}

	api := http.NewServeMux()
	h.routes(&routeTable{mux: api})
	limited := h.limitAndAuth(api)
	v1 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Record the matched route for the request log and metrics, and its
		// error shape for the answers given before the handler runs.
		if ri, ok := r.Context().Value(keyRoute).(*routeInfo); ok {
			if rt := matchedRoute(api, r); rt != nil {
				ri.shape = rt.shape
				if rt.known {
					ri.pattern = rt.pattern
				}
			}
		}
		limited.ServeHTTP(w, r)
	})

	root := http.NewServeMux()
	h.rootRoutes(root, v1)
	return h.outer(sdkContactImport(sentEmailParts(sdkBroadcasts(root, v1))))
}

// sentEmailParts serves GET /v1/emails/{id}/attempts (#48) and the Resend
// SDKs' GET /v1/emails/{id}/attachments[/{attachment}] as
// /v1/emails/sent/{id}/…: ServeMux cannot hold a GET /v1/emails/{id}/<part>
// beside GET /v1/emails/receiving/{id} (neither is more specific).
func sentEmailParts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/emails/"); ok && r.Method == http.MethodGet {
			parts := strings.Split(rest, "/")
			part := len(parts) >= 2 && parts[0] != "receiving" && parts[0] != "sent"
			if part && ((len(parts) == 2 || len(parts) == 3) && parts[1] == "attachments" || len(parts) == 2 && parts[1] == "attempts") {
				r2 := r.Clone(r.Context())
				r2.URL.Path, r2.URL.RawPath = "/v1/emails/sent/"+rest, ""
				next.ServeHTTP(w, r2)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sdkContactImport serves the Resend SDKs' GET /v1/contacts/imports/{id}
// as /v1/contact-imports/{id}: ServeMux cannot hold it beside GET
// /v1/contacts/{id}/tags and the other {id} routes (neither is more specific).
func sdkContactImport(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/contacts/imports/"); ok && r.Method == http.MethodGet && id != "" && !strings.Contains(id, "/") {
			r2 := r.Clone(r.Context())
			r2.URL.Path, r2.URL.RawPath = "/v1/contact-imports/"+id, ""
			next.ServeHTTP(w, r2)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sdkBroadcasts serves under /v1 the three broadcast calls the Resend Go
// SDK makes outside its base URL's /v1 (POST /broadcasts, PATCH
// /broadcasts/{id}, POST /broadcasts/{id}/send); they carry an API key,
// which the dashboard's own /broadcasts pages (cookies) never do.
func sdkBroadcasts(root, v1 http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if (p == "/broadcasts" || strings.HasPrefix(p, "/broadcasts/")) && (r.Method == http.MethodPost || r.Method == http.MethodPatch) &&
			strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			r2 := r.Clone(r.Context())
			r2.URL.Path, r2.URL.RawPath = "/v1"+p, ""
			v1.ServeHTTP(w, r2)
			return
		}
		root.ServeHTTP(w, r)
	})
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, probeJSON{Status: "ok"})
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if h.d.Ready != nil {
		if err := h.d.Ready(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, probeJSON{Status: "unavailable", Error: err.Error()})
			return
		}
	}
	// Degraded still answers 200: the node serves every request.
	if dg, ok := h.d.Limiter.(interface{ Degraded() string }); ok {
		if why := dg.Degraded(); why != "" {
			writeJSON(w, http.StatusOK, probeJSON{Status: "degraded", Degraded: []string{why}})
			return
		}
	}
	writeJSON(w, http.StatusOK, probeJSON{Status: "ready"})
}

func (h *handler) noRoute(w http.ResponseWriter, r *http.Request) { writeError(w, r, errNoRoute()) }

// probeJSON answers /healthz and /readyz.
type probeJSON struct {
	Degraded []string `json:"degraded,omitempty"`
	Error    string   `json:"error,omitempty"`
	Status   string   `json:"status"`
}
