package httpapi_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/testkit/testapp"
)

func TestRateLimitPerKey(t *testing.T) {
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_RATE_LIMIT", "5"), testapp.WithEnv("MAILROOM_RATE_LIMIT_ANONYMOUS", "3"))
	check429 := func(r *testapp.Response, limit int) {
		t.Helper()
		if r.Status != 429 || r.JSON()["error"] != "rate_limited" {
			t.Fatalf("want flat 429 rate_limited, got %d %s", r.Status, r.Body)
		}
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 60 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		if r.Header.Get("RateLimit-Remaining") != "0" || r.Header.Get("RateLimit-Limit") != strconv.Itoa(limit) {
			t.Fatalf("headers %v", r.Header)
		}
	}
	for i := 0; i < 5; i++ {
		r := a.Do("GET", "/v1/api-keys", nil)
		if r.Status != 200 {
			t.Fatalf("request %d: %d", i, r.Status)
		}
		if got := r.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(4-i) {
			t.Fatalf("remaining after %d: %s", i+1, got)
		}
		if r.Header.Get("RateLimit-Policy") != "5;w=60" {
			t.Fatalf("policy %q", r.Header.Get("RateLimit-Policy"))
		}
		reset, _ := strconv.Atoi(r.Header.Get("RateLimit-Reset"))
		abs, _ := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
		now := time.Now().Unix()
		if reset < 0 || reset > 60 || abs < now || abs > now+61 {
			t.Fatalf("reset %d abs %d now %d", reset, abs, now)
		}
		if r.Header.Get("Retry-After") != "" {
			t.Fatal("Retry-After on a 200")
		}
	}
	check429(a.Do("GET", "/v1/api-keys", nil), 5)
	// Anonymous callers have their own, smaller per-IP budget.
	for i := 0; i < 3; i++ {
		if r := a.DoKey("", "GET", "/v1/api-keys", nil); r.Status != 401 {
			t.Fatalf("anonymous %d: %d", i, r.Status)
		}
	}
	check429(a.DoKey("", "GET", "/v1/api-keys", nil), 3)
}

func TestRateLimitSharedThroughRedis(t *testing.T) {
	url := os.Getenv("MAILROOM_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/15"
	}
	prefixEnv := testapp.WithEnv("MAILROOM_REDIS_URL", url)
	a := testapp.Start(t, prefixEnv, testapp.WithEnv("MAILROOM_RATE_LIMIT", "6"))
	if r := a.Do("GET", "/v1/api-keys", nil); r.Status != 200 {
		t.Skipf("Redis at %s not usable (%d %s)", url, r.Status, r.Body)
	}
	b := testapp.Start(t, prefixEnv, testapp.WithEnv("MAILROOM_RATE_LIMIT", "6"), testapp.WithDatabase(a.Env["MAILROOM_DATABASE_URL"]))
	// Same key, two nodes, one budget: 6 in total.
	for i := 0; i < 5; i++ {
		node := a
		if i%2 == 0 {
			node = b
		}
		r := node.DoKey(a.Key, "GET", "/v1/api-keys", nil)
		if r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := b.DoKey(a.Key, "GET", "/v1/api-keys", nil); r.Status != 429 {
		t.Fatalf("7th request across nodes: %d (remaining %s)", r.Status, r.Header.Get("RateLimit-Remaining"))
	}
}

func TestHealthReadyMetricsOpenAPI(t *testing.T) {
	a := testapp.Start(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(a.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, err, resp)
		}
		resp.Body.Close()
	}
	a.Do("GET", "/v1/api-keys", nil)
	resp, err := http.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	buf := new(strings.Builder)
	fmt.Fprint(buf, "")
	b := make([]byte, 1<<20)
	n, _ := readAll(resp, b)
	body := string(b[:n])
	for _, want := range []string{`mailroom_http_requests_total{route="GET /v1/api-keys",status="200"}`, "mailroom_http_request_duration_seconds", "mailroom_queue_depth"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	r := a.DoKey("", "GET", "/v1/openapi.json", nil)
	if r.Status != 200 || r.JSON()["openapi"] != "3.1.0" {
		t.Fatalf("openapi: %d %.200s", r.Status, r.Body)
	}
}

func readAll(resp *http.Response, b []byte) (int, error) {
	defer resp.Body.Close()
	n := 0
	for n < len(b) {
		m, err := resp.Body.Read(b[n:])
		n += m
		if err != nil {
			return n, nil
		}
	}
	return n, nil
}

func TestLastUsedCoalesced(t *testing.T) {
	a := testapp.Start(t)
	a.Do("GET", "/v1/api-keys", nil)
	var stored *int64
	row := a.DB.QueryRow(t.Context(), `SELECT last_used_at FROM api_keys WHERE workspace_id = ?`, a.WorkspaceID)
	if err := row.Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != nil {
		t.Fatalf("authentication wrote last_used_at per request")
	}
	if r := a.Do("GET", "/v1/api-keys", nil); r.JSON()["api_keys"].([]any)[0].(map[string]any)["last_used_at"] == nil {
		t.Fatalf("list does not show the pending last use: %s", r.Body)
	}
	if err := a.Workspaces.FlushLastUsed(t.Context()); err != nil {
		t.Fatal(err)
	}
	row = a.DB.QueryRow(t.Context(), `SELECT last_used_at FROM api_keys WHERE workspace_id = ?`, a.WorkspaceID)
	if err := row.Scan(&stored); err != nil || stored == nil {
		t.Fatalf("flush did not write: %v", err)
	}
}

func TestRequestIDsAreUnique(t *testing.T) {
	a := testapp.Start(t)
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		id := a.Do("GET", "/v1/api-keys", nil).Header.Get("x-request-id")
		if !ids.HasPrefix(id, "req") || seen[id] {
			t.Fatalf("request id %q", id)
		}
		seen[id] = true
	}
}
