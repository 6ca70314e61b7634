package httpapi

import (
	"crypto/subtle"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsAccess says who may read /metrics.
type MetricsAccess struct {
	// Token, when set, is required as "Authorization: Bearer <token>" from
	// any address (MAILROOM_METRICS_TOKEN).
	Token string
	// LoopbackOnly, without a token, answers only clients on this host that
	// did not come through a proxy: the default on the API listener, which
	// the internet may reach.
	LoopbackOnly bool
}

// MetricsHandler serves reg's metrics to the callers access admits: 401
// without the token, 403 from elsewhere than loopback; the bodies say
// which setting opens it.
func MetricsHandler(reg *prometheus.Registry, access MetricsAccess) http.Handler {
	serve := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	want := []byte("Bearer " + access.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case access.Token != "":
			// Constant time: the comparison must not tell how much of a guess was right.
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				http.Error(w, "/metrics needs Authorization: Bearer <MAILROOM_METRICS_TOKEN>", http.StatusUnauthorized)
				return
			}
		case access.LoopbackOnly && !fromLoopback(r):
			http.Error(w, "/metrics answers loopback clients only; set MAILROOM_METRICS_TOKEN or MAILROOM_METRICS_ADDR to read it from elsewhere", http.StatusForbidden)
			return
		}
		serve.ServeHTTP(w, r)
	})
}

// fromLoopback reports a client on this host; a request a proxy forwarded
// is from wherever the proxy's client was, so it does not count.
func fromLoopback(r *http.Request) bool {
	if r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "" || r.Header.Get("X-Real-Ip") != "" {
		return false
	}
	ip := net.ParseIP(clientIP(r))
	return ip != nil && ip.IsLoopback()
}
