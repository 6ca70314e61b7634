package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestMetricsAccess: who reads /metrics in each combination of
// MAILROOM_METRICS_TOKEN and MAILROOM_METRICS_ADDR. Neither: the API
// listener answers loopback clients only (not a proxied request, not a
// remote address). A token: the bearer token from anywhere, 401 without
// it. An address: /metrics there and not on the API listener.
func TestMetricsAccess(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef0123"
	type try struct {
		name     string
		listener string // "api" or "metrics"
		remote   string // a remote address: the request goes to the handler in-process
		header   map[string]string
		status   int
		body     string
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []try
	}{
		{"neither", nil, []try{
			{"loopback", "api", "", nil, 200, "mailroom_build_info"},
			{"proxied", "api", "", map[string]string{"X-Forwarded-For": "203.0.113.9"}, 403, "loopback clients only"},
			{"remote", "api", "203.0.113.9:4000", nil, 403, "MAILROOM_METRICS_TOKEN"},
		}},
		{"token", map[string]string{"MAILROOM_METRICS_TOKEN": token}, []try{
			{"no token", "api", "", nil, 401, "Bearer"},
			{"wrong token", "api", "", map[string]string{"Authorization": "Bearer " + token + "x"}, 401, "MAILROOM_METRICS_TOKEN"},
			{"remote with token", "api", "203.0.113.9:4000", map[string]string{"Authorization": "Bearer " + token}, 200, "mailroom_build_info"},
		}},
		{"address", map[string]string{"MAILROOM_METRICS_ADDR": "127.0.0.1:0"}, []try{
			{"not on the api", "api", "", nil, 404, "not_found"},
			{"on its own", "metrics", "", nil, 200, "mailroom_build_info"},
		}},
		{"address and token", map[string]string{"MAILROOM_METRICS_ADDR": "127.0.0.1:0", "MAILROOM_METRICS_TOKEN": token}, []try{
			{"not on the api", "api", "", map[string]string{"Authorization": "Bearer " + token}, 404, "not_found"},
			{"own without token", "metrics", "", nil, 401, "Bearer"},
			{"own with token", "metrics", "", map[string]string{"Authorization": "Bearer " + token}, 200, "mailroom_build_info"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []testapp.Option
			for k, v := range tc.env {
				opts = append(opts, testapp.WithEnv(k, v))
			}
			a := testapp.Start(t, opts...)
			for _, tr := range tc.want {
				base := a.URL
				if tr.listener == "metrics" {
					if a.MetricsAddr() == "" {
						t.Fatal("no metrics listener")
					}
					base = "http://" + a.MetricsAddr()
				}
				req := httptest.NewRequest("GET", base+"/metrics", nil)
				for k, v := range tr.header {
					req.Header.Set(k, v)
				}
				var status int
				var body string
				if tr.remote != "" {
					req.RemoteAddr = tr.remote
					rec := httptest.NewRecorder()
					a.Handler.ServeHTTP(rec, req)
					status, body = rec.Code, rec.Body.String()
				} else {
					req.RequestURI = ""
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					status, body = res.StatusCode, string(b)
				}
				if status != tr.status || !strings.Contains(body, tr.body) {
					t.Errorf("%s: %d %.200q; want %d with %q", tr.name, status, body, tr.status, tr.body)
				}
			}
		})
	}
}
