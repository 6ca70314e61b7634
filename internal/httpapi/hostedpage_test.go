package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"mailroom/internal/testkit/testapp"
)

// TestHostedPageHeaders: every page a recipient's browser opens from an
// email answers with a CSP that forbids framing, X-Frame-Options and
// nosniff, on its error answers (bad token, over the rate limit) too.
func TestHostedPageHeaders(t *testing.T) {
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_RATE_LIMIT_ANONYMOUS", "20"))
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"List-Unsubscribe": {"One-Click"}}.Encode()
	for _, tc := range []struct{ method, path string }{
		{"GET", "/confirm/bad-token"},
		{"POST", "/confirm/bad-token"},
		{"GET", "/preferences/bad-token"},
		{"POST", "/preferences/bad-token"},
		{"GET", "/unsubscribe/bad-token"},
		{"POST", "/unsubscribe/bad-token"},
		{"GET", "/t/c/bad-token"},
		{"GET", "/t/o/bad-token"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, a.URL+tc.path, strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			checkHostedHeaders(t, res)
		})
	}
	t.Run("over the rate limit", func(t *testing.T) {
		var res *http.Response
		for i := 0; i < 40; i++ {
			r, err := http.Get(a.URL + "/confirm/bad-token")
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if res = r; r.StatusCode == http.StatusTooManyRequests {
				break
			}
		}
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("status %d, want 429", res.StatusCode)
		}
		checkHostedHeaders(t, res)
	})
}

func checkHostedHeaders(t *testing.T, res *http.Response) {
	t.Helper()
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("status %d: CSP %q lacks %q", res.StatusCode, csp, want)
		}
	}
	if got := res.Header.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("X-Frame-Options %q", got)
	}
	if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", got)
	}
	if got := res.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("Referrer-Policy %q", got)
	}
}
