package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/wait"
)

// TestRateLimitFallsBackWhenRedisIsDown: with MAILROOM_REDIS_URL pointing at
// a port nothing listens on, the node still limits (in memory) with every
// header, /readyz answers 200 "degraded", and the metrics say so. When a
// Redis starts on that port (if redis-server is on PATH), counting goes back
// to it, carrying the window's count, and /readyz to "ready".
func TestRateLimitFallsBackWhenRedisIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// A fake clock keeps the requests in one window.
	fake := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 5, 0, time.UTC))
	a := testapp.Start(t, testapp.WithClock(fake),
		testapp.WithEnv("MAILROOM_REDIS_URL", fmt.Sprintf("redis://127.0.0.1:%d/0", port)),
		testapp.WithEnv("MAILROOM_RATE_LIMIT", "3"))
	for i := range 3 {
		r := a.Do("GET", "/v1/api-keys", nil)
		if r.Status != 200 || r.Header.Get("RateLimit-Remaining") != strconv.Itoa(2-i) || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) ||
			r.Header.Get("RateLimit-Limit") != "3" || r.Header.Get("RateLimit-Reset") != "55" || r.Header.Get("RateLimit-Policy") != "3;w=60" {
			t.Fatalf("request %d: %d %v", i+1, r.Status, r.Header)
		}
	}
	if r := a.Do("GET", "/v1/api-keys", nil); r.Status != 429 || r.Header.Get("Retry-After") != "55" || r.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("4th request: %d %v", r.Status, r.Header)
	}
	status, body := readyz(t, a)
	if status != 200 || body["status"] != "degraded" || !strings.Contains(fmt.Sprint(body["degraded"]), "Redis unreachable") {
		t.Fatalf("/readyz: %d %v", status, body)
	}
	metrics := get(t, a.URL+"/metrics")
	for _, want := range []string{"mailroom_ratelimit_degraded 1", "mailroom_ratelimit_fallback_total 4"} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %q", want)
		}
	}

	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH: the return to Redis is not tested here")
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// One request per second tries Redis; the first that reaches it carries
	// the window's count there, so the key stays refused (no fresh budget
	// at the switch) until the window ends, then counts in Redis.
	wait.For(t, 15*time.Second, func() bool {
		r := a.Do("GET", "/v1/api-keys", nil)
		if r.Status != 429 {
			t.Fatalf("a fresh budget at the switch back to Redis: %d %v", r.Status, r.Header)
		}
		_, body := readyz(t, a)
		return body["status"] == "ready"
	}, "still counting in memory 15 s after Redis started")
	fake.Advance(time.Minute)
	if r := a.Do("GET", "/v1/api-keys", nil); r.Status != 200 || r.Header.Get("RateLimit-Remaining") != "2" {
		t.Fatalf("first request of the next window, in Redis: %d %v", r.Status, r.Header)
	}
	if r := a.Do("GET", "/v1/api-keys", nil); r.Status != 200 || r.Header.Get("RateLimit-Remaining") != "1" {
		t.Fatalf("second request in Redis: %d %v", r.Status, r.Header)
	}
	if status, body := readyz(t, a); status != 200 || body["status"] != "ready" {
		t.Fatalf("/readyz after recovery: %d %v", status, body)
	}
	if m := get(t, a.URL+"/metrics"); !strings.Contains(m, "mailroom_ratelimit_degraded 0") {
		t.Fatal("degraded gauge not back to 0")
	}
}

func readyz(t *testing.T, a *testapp.App) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(a.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
