package webhooks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/apierr"
)

// received is what a test receiver saw.
type received struct {
	header http.Header
	body   []byte
}

// receiver starts a real HTTP server on loopback answering with h after
// recording the request.
func receiver(t *testing.T, h http.HandlerFunc) (*httptest.Server, <-chan received) {
	t.Helper()
	got := make(chan received, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{header: r.Header.Clone(), body: b}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func deliverTo(t *testing.T, c *http.Client, url string, static map[string]string, body []byte) Attempt {
	t.Helper()
	now := time.Now()
	return Deliver(context.Background(), c, url, static, nil, "whd_01", "email.delivered", body, Sign(now, body, "whsec_test"), now)
}

func TestDeliverSignedAndHeaders(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	body := []byte(`{"id":"whd_01","event":"email.delivered","sequence":3,"data":{}}`)
	static := map[string]string{
		"Authorization":   "Bearer abc",
		"x-svc-signature": "forged",
		"X-SVC-EVENT":     "forged",
		"x-request-id":    "forged",
		"Content-Type":    "text/plain",
		"Host":            "evil.example",
		"Content-Length":  "1",
		"Bad Name":        "x",
		"X-Newline":       "a\r\nX-Injected: 1",
	}
	a := deliverTo(t, NewHTTPClient(true), srv.URL, static, body)
	if !a.Success || a.StatusCode != 200 || a.Body != "ok" || a.Err != "" || a.Duration <= 0 {
		t.Fatalf("attempt = %+v", a)
	}
	r := <-got
	if string(r.body) != string(body) {
		t.Fatalf("body = %s", r.body)
	}
	for k, want := range map[string]string{
		"Content-Type":      "application/json",
		"X-Svc-Event":       "email.delivered",
		"X-Svc-Delivery-Id": "whd_01",
		"X-Request-Id":      "whd_01",
		"Authorization":     "Bearer abc",
	} {
		if v := r.header.Values(k); len(v) != 1 || v[0] != want {
			t.Errorf("header %s = %q, want [%q]", k, v, want)
		}
	}
	if r.header.Get("X-Injected") != "" || r.header.Get("X-Newline") != "" {
		t.Error("a header value with CRLF was sent")
	}

	// Verify the signature the way a receiver would, from scratch.
	sig := r.header.Values("X-Svc-Signature")
	if len(sig) != 1 {
		t.Fatalf("signature headers = %q", sig)
	}
	var ts, v1 string
	for _, part := range strings.Split(sig[0], ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	var unix int64
	fmt.Sscan(ts, &unix)
	if want := independentSig("whsec_test", time.Unix(unix, 0), r.body); v1 != want {
		t.Fatalf("v1 = %s, want %s", v1, want)
	}
	if err := Verify(sig[0], r.body, "whsec_test", time.Now(), SignatureTolerance); err != nil {
		t.Fatal(err)
	}
}

func TestDeliverOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		handler        http.HandlerFunc
		wantStatus     int
		wantSuccess    bool
		wantGone       bool
		wantRetryAfter time.Duration
		wantErr        string
	}{
		{"204", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }, 204, true, false, 0, ""},
		{"500", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }, 500, false, false, 0, "500"},
		{"410", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(410) }, 410, false, true, 0, "410"},
		{"429 Retry-After", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(429)
		}, 429, false, false, 2 * time.Minute, "429"},
		{"503 Retry-After date", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", time.Now().Add(time.Hour+time.Minute).UTC().Format(http.TimeFormat))
			w.WriteHeader(503)
		}, 503, false, false, -1, "503"},
		{"200 with Retry-After ignored", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "120")
		}, 200, true, false, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := receiver(t, c.handler)
			a := deliverTo(t, NewHTTPClient(true), srv.URL, nil, []byte(`{}`))
			if a.StatusCode != c.wantStatus || a.Success != c.wantSuccess || a.Gone != c.wantGone {
				t.Fatalf("attempt = %+v", a)
			}
			if c.wantRetryAfter >= 0 && a.RetryAfter != c.wantRetryAfter {
				t.Fatalf("RetryAfter = %s, want %s", a.RetryAfter, c.wantRetryAfter)
			}
			if c.wantRetryAfter < 0 && (a.RetryAfter < time.Hour || a.RetryAfter > time.Hour+time.Minute) {
				t.Fatalf("RetryAfter from date = %s, want about 1h1m", a.RetryAfter)
			}
			if (c.wantErr == "") != (a.Err == "") || !strings.Contains(a.Err, c.wantErr) {
				t.Fatalf("Err = %q, want containing %q", a.Err, c.wantErr)
			}
		})
	}
}

func TestDeliverTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := NewHTTPClient(true)
	c.Timeout = 200 * time.Millisecond
	start := time.Now()
	a := deliverTo(t, c, srv.URL, nil, []byte(`{}`))
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %s", took)
	}
	if a.Success || a.StatusCode != 0 || !strings.Contains(a.Err, "timeout") {
		t.Fatalf("attempt = %+v", a)
	}
}

func TestDeliverSlowBodyIsFailure(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := NewHTTPClient(true)
	c.Timeout = 200 * time.Millisecond
	a := deliverTo(t, c, srv.URL, nil, []byte(`{}`))
	if a.Success || !strings.Contains(a.Err, "timeout") {
		t.Fatalf("attempt = %+v", a)
	}
}

func TestDeliverDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Add(1) }))
	t.Cleanup(target.Close)
	srv, _ := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	})
	a := deliverTo(t, NewHTTPClient(true), srv.URL, nil, []byte(`{}`))
	if a.Success || a.StatusCode != http.StatusTemporaryRedirect || followed.Load() != 0 {
		t.Fatalf("attempt = %+v, followed %d", a, followed.Load())
	}
}

func TestDeliverRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, func(http.ResponseWriter, *http.Request) {})
	for _, url := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		a := deliverTo(t, NewHTTPClient(false), url, nil, []byte(`{}`))
		if a.Success || a.StatusCode != 0 || !strings.Contains(a.Err, "address not allowed by the outbound policy") {
			t.Fatalf("%s: attempt = %+v", url, a)
		}
	}
	select {
	case <-got:
		t.Fatal("the loopback receiver was reached")
	default:
	}
}

func TestDeliverCapsBody(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		write string
		want  string
	}{
		{"huge", strings.Repeat("a", 1<<20), strings.Repeat("a", ResponseBodyCap)},
		{"exactly cap", strings.Repeat("b", ResponseBodyCap), strings.Repeat("b", ResponseBodyCap)},
		{"cut inside a rune", strings.Repeat("a", ResponseBodyCap-1) + "é", strings.Repeat("a", ResponseBodyCap-1) + "\uFFFD"},
		{"NUL and bad UTF-8", "a\x00b\xffc", "ab\uFFFDc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := receiver(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(500)
				io.WriteString(w, c.write)
			})
			a := deliverTo(t, NewHTTPClient(true), srv.URL, nil, []byte(`{}`))
			if a.Body != c.want {
				t.Fatalf("body of %d bytes %q..., want %d bytes", len(a.Body), a.Body[:min(20, len(a.Body))], len(c.want))
			}
		})
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url          string
		allowPrivate bool
		wantErr      string // substring of the message; "" means valid
	}{
		{"https://hooks.example.com/mailroom", false, ""},
		{"https://hooks.example.com:8443/x?y=1", false, ""},
		{"https://93.184.216.34/x", false, ""},
		{"http://hooks.example.com/x", false, "https"},
		{"http://127.0.0.1:8080/x", true, ""},
		{"https://localhost/x", true, ""},
		{"ftp://hooks.example.com/x", true, "https"},
		{"/relative/path", false, "absolute"},
		{"hooks.example.com/x", false, "absolute"},
		{"", false, "required"},
		{"https://", false, "host"},
		{"https:opaque", false, "host"},
		{"https://user:pass@hooks.example.com/", false, "password"},
		{"https://hooks.example.com:99999/", false, "port"},
		{"https://localhost/x", false, "localhost"},
		{"https://api.localhost./x", false, "localhost"},
		{"https://127.0.0.1/x", false, "public address"},
		{"https://169.254.169.254/latest/meta-data", false, "public address"},
		{"https://[::1]/x", false, "public address"},
		{"https://[::ffff:10.0.0.1]/x", false, "public address"},
		{"https://[::ffff:0:127.0.0.1]/x", false, "public address"}, // IPv4-translated, RFC 2765
		{"https://[2002:a9fe:a9fe::1]/x", false, "public address"},  // 6to4 of the metadata address
		{"https://exa mple.com/", false, "valid URL"},
		{"https://example.com/" + strings.Repeat("a", 3000), false, "longer"},
	}
	for _, c := range cases {
		err := ValidateURL(c.url, c.allowPrivate)
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("ValidateURL(%q, %v) = %v, want nil", c.url, c.allowPrivate, err)
			}
			continue
		}
		e, ok := apierr.As(err)
		if !ok || e.Status != 400 || e.Code != "invalid_request" || !strings.Contains(e.Message, c.wantErr) {
			t.Errorf("ValidateURL(%q, %v) = %v, want 400 invalid_request mentioning %q", c.url, c.allowPrivate, err, c.wantErr)
		}
	}
}

func TestValidateStaticHeaders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		h  map[string]string
		ok bool
	}{
		{map[string]string{"Authorization": "Bearer x", "X-Tenant": "7"}, true},
		{nil, true},
		{map[string]string{"x-svc-signature": "x"}, false},
		{map[string]string{"HOST": "x"}, false},
		{map[string]string{"content-length": "1"}, false},
		{map[string]string{"Bad Name": "x"}, false},
		{map[string]string{"X-A": "a\r\nb"}, false},
	}
	for _, c := range cases {
		err := ValidateStaticHeaders(c.h)
		if (err == nil) != c.ok {
			t.Errorf("ValidateStaticHeaders(%v) = %v, want ok=%v", c.h, err, c.ok)
		}
		if err != nil && !apierr.Is(err, "invalid_request") {
			t.Errorf("error %v is not invalid_request", err)
		}
	}
}

func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{"https://a.example/x", "http://127.0.0.1/", "https://[::ffff:a9fe:a9fe]/", "https://u@h/", "https://h:0/", "//h/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateURL(s, false) != nil {
			return
		}
		if !strings.HasPrefix(strings.ToLower(s), "https:") {
			t.Fatalf("accepted non-https %q", s)
		}
		if ValidateURL(s, true) != nil {
			t.Fatalf("%q valid for public but not with allowPrivate", s)
		}
	})
}

// TestDeliverDNSFailureNamesNoServer: a name that does not resolve is
// reported by the name alone, never with the node's own DNS server.
func TestDeliverDNSFailureNamesNoServer(t *testing.T) {
	t.Parallel()
	a := deliverTo(t, NewHTTPClient(false), "https://no-such-host.invalid/hooks", nil, []byte(`{}`))
	if a.Err != "could not resolve host no-such-host.invalid" {
		t.Fatalf("attempt = %+v", a)
	}
}
