package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/ratelimit"
	"mailroom/internal/requestlog"
	"mailroom/internal/workspaces"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyAPIKey
	keyRoute
)

// routeInfo carries the matched route of the inner /v1 mux: its pattern out
// to the logging middleware, its error shape to writeError.
type routeInfo struct {
	pattern string // "" when no route matched
	shape   errShape
	key     *workspaces.Key // the authenticated key, for the request log
	errCode string          // the error answered, for the request log
}

// noteError records the error code answered to r, for the request log.
func noteError(r *http.Request, code string) {
	if ri, ok := r.Context().Value(keyRoute).(*routeInfo); ok {
		ri.errCode = code
	}
}

// routeShape is the error shape of the request's route (nested when none).
func routeShape(r *http.Request) errShape {
	if ri, ok := r.Context().Value(keyRoute).(*routeInfo); ok {
		return ri.shape
	}
	return nested
}

func requestID(r *http.Request) string {
	if v, ok := r.Context().Value(keyRequestID).(string); ok {
		return v
	}
	return ""
}

// apiKey returns the authenticated key of the request (set by authenticate).
func apiKey(r *http.Request) *workspaces.Key {
	k, _ := r.Context().Value(keyAPIKey).(*workspaces.Key)
	return k
}

// statusWriter remembers the status for logs and metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	bytes  int64 // the body's size, for the request log
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status = code
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	w.bytes += int64(len(b))
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mailroom_http_requests_total", Help: "HTTP requests by route pattern and status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mailroom_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// outer wraps every request: request id, panic recovery, one log line and
// metrics. A panic becomes 500 internal_error with the request id instead of
// a dropped connection.
func (h *handler) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := ids.New("req")
		w.Header()["X-Request-Id"] = []string{rid} // canonical, as Set would store it
		ri := &routeInfo{}
		ctx := context.WithValue(context.WithValue(r.Context(), keyRequestID, rid), keyRoute, ri)
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				slog.ErrorContext(r.Context(), "panic in handler", "panic", fmt.Sprint(p), "request_id", rid, "stack", string(debug.Stack()))
				if !sw.wrote {
					writeError(sw, r, fmt.Errorf("panic: %v", p))
				}
			}
			route := r.Pattern
			if ri.pattern != "" && ri.pattern != "/v1/" {
				route = ri.pattern
			}
			if route == "" || route == "/" || route == "/v1/" {
				route = "unmatched"
			}
			d := time.Since(start)
			h.metrics.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
			h.metrics.latency.WithLabelValues(route).Observe(d.Seconds())
			if h.logRequests {
				// Request lines are debug: the mail log is what an operator
				// reads at info. A server error still shows.
				lvl := slog.LevelDebug
				if sw.status >= 500 {
					lvl = slog.LevelWarn
				}
				h.log.LogAttrs(r.Context(), lvl, "request",
					slog.String("method", r.Method), slog.String("route", route), slog.Int("status", sw.status),
					slog.Duration("duration", d), slog.String("request_id", rid))
			}
			if ri.key != nil && h.d.RequestLog != nil {
				h.logRequest(r, ri, sw, rid, start, d)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// limitAndAuth runs on every /v1 request: it identifies the caller (API key
// or anonymous IP), counts the request against that budget, writes the
// rate-limit headers, and refuses bad keys. Scope checks happen per route.
func (h *handler) limitAndAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var key *workspaces.Key
		var authErr error
		if authz := r.Header.Get("Authorization"); authz != "" {
			secret, ok := strings.CutPrefix(authz, "Bearer ")
			if !ok {
				authErr = workspaces.ErrBadKey
			} else {
				authenticate := h.d.Workspaces.Authenticate
				if r.Method == http.MethodPost && (r.URL.Path == "/v1/emails" || r.URL.Path == "/v1/emails/batch") {
					// The send confirms the key in its commit, or before any
					// other answer (see writeError).
					authenticate = h.d.Workspaces.AuthenticateForSend
				}
				key, authErr = authenticate(r.Context(), strings.TrimSpace(secret))
			}
		} else if r.URL.Path != "/v1/openapi.json" && !isRawDownload(r) {
			authErr = workspaces.ErrBadKey
		}
		if key != nil {
			if ri, ok := r.Context().Value(keyRoute).(*routeInfo); ok {
				ri.key = key
			}
		}
		if authErr != nil && !apierr.Is(authErr, "unauthorized") {
			writeError(w, r, authErr)
			return
		}
		bucket, limit := "ip:"+clientIP(r), h.d.AnonymousLimit
		if key != nil {
			bucket, limit = "key:"+key.ID, h.d.KeyLimit
		}
		res, err := h.d.Limiter.Allow(r.Context(), bucket, limit)
		if err != nil {
			// A rate-limit store outage must not take the API down: let the
			// request through and say nothing about the remaining budget.
			slog.WarnContext(r.Context(), "rate limiter unavailable", "err", err)
			res = ratelimit.Result{Limit: limit, Remaining: -1, Reset: h.d.Clock.Now().Truncate(time.Minute).Add(time.Minute), Allowed: true}
		}
		now := h.d.Clock.Now()
		setRateHeaders(w.Header(), res, now)
		if !res.Allowed {
			if key != nil {
				if err := key.Confirm(r.Context()); err != nil {
					writeError(w, r, err)
					return
				}
			}
			wait := res.RetryAfter(now)
			w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
			w.Header().Set("RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Remaining", "0")
			// The spec answers rate_limited flat on every route.
			noteError(r, "rate_limited")
			writeErrorShape(w, apierr.New(http.StatusTooManyRequests, "rate_limited",
				"Rate limit of %d requests per minute exceeded.", res.Limit).WithNext("Wait Retry-After seconds, then retry."), flat)
			return
		}
		if authErr != nil {
			writeError(w, r, authErr)
			return
		}
		if key != nil {
			r = r.WithContext(context.WithValue(r.Context(), keyAPIKey, key))
		}
		if err := h.storage(r); err != nil {
			writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// logRequest hands the call to the request log (internal/requestlog),
// which queues it without waiting: the answer is already written.
func (h *handler) logRequest(r *http.Request, ri *routeInfo, sw *statusWriter, rid string, start time.Time, d time.Duration) {
	h.d.RequestLog.Record(requestlog.Entry{
		WorkspaceID: ri.key.WorkspaceID, APIKeyID: ri.key.ID, Method: r.Method,
		Path: requestlog.Redact(r.URL.Path, r.URL.RawQuery), Status: sw.status, ErrorCode: ri.errCode,
		UserAgent: r.Header.Get("User-Agent"), RequestID: rid, Duration: d, RequestBytes: max(r.ContentLength, 0),
		ResponseBytes: sw.bytes, ContentType: r.Header.Get("Content-Type"), At: start,
	})
}

func setRateHeaders(hd http.Header, res ratelimit.Result, now time.Time) {
	reset := int(res.Reset.Sub(now).Seconds() + 0.999)
	if reset < 0 {
		reset = 0
	}
	// The keys are written in canonical form, as Set would store them,
	// which spares every answer seven canonicalisations.
	// One backing array for the seven values, sliced so that an append to
	// one cannot reach the next.
	limit := strconv.Itoa(res.Limit)
	v := [...]string{limit, limit, strconv.Itoa(reset), strconv.FormatInt(res.Reset.Unix(), 10), limit + ";w=60", "", ""}
	vals := v[:]
	hd["Ratelimit-Limit"] = vals[0:1:1]
	hd["X-Ratelimit-Limit"] = vals[1:2:2]
	hd["Ratelimit-Reset"] = vals[2:3:3]
	hd["X-Ratelimit-Reset"] = vals[3:4:4]
	hd["Ratelimit-Policy"] = vals[4:5:5]
	if res.Remaining >= 0 {
		vals[5] = strconv.Itoa(res.Remaining)
		vals[6] = vals[5]
		hd["Ratelimit-Remaining"] = vals[5:6:6]
		hd["X-Ratelimit-Remaining"] = vals[6:7:7]
	}
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// errBound answers a workspace-wide route to a key bound to a mailbox.
func errBound(mailboxID string) error {
	return apierr.New(http.StatusForbidden, "insufficient_scope", "This API key is bound to mailbox %s and may use only that mailbox's routes (emails, messages, threads, search, identity, mailboxes, webhooks, api-keys).", mailboxID).
		WithNext("Use a key that is not bound to a mailbox for workspace-wide routes.")
}

func errScope(scope string) error {
	return apierr.New(http.StatusForbidden, "insufficient_scope", "This API key lacks the %s scope.", scope).
		WithNext("Use a key created with the " + scope + " scope, or without scopes for full access.")
}

// storage refuses a request that would add work while the disk is nearly
// full (Deps.Storage); a DELETE frees space, and reads write nothing.
func (h *handler) storage(r *http.Request) error {
	if h.d.Storage == nil {
		return nil
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return h.d.Storage()
	}
	return nil
}
