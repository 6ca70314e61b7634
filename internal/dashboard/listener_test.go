package dashboard_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// TestDashboardAddr: with MAILROOM_DASHBOARD_ADDR the dashboard answers only
// on its own listener (the API's answers not_found at /sign-in); with off,
// nowhere.
func TestDashboardAddr(t *testing.T) {
	t.Parallel()
	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_DASHBOARD_ADDR", "127.0.0.1:0"))
	if a.DashboardAddr() == "" {
		t.Fatal("no dashboard listener")
	}
	if st, body := get("http://" + a.DashboardAddr() + "/sign-in"); st != 200 || !strings.Contains(body, "Workspace API key") {
		t.Fatalf("dashboard listener: %d %s", st, body)
	}
	if st, body := get("http://" + a.DashboardAddr() + "/v1/domains"); st != 404 || !strings.Contains(body, "Not found") {
		t.Fatalf("the dashboard listener serves the API: %d %s", st, body)
	}
	if st, body := get(a.URL + "/sign-in"); st != 404 || !strings.Contains(body, "not_found") {
		t.Fatalf("the API listener still serves the dashboard: %d %s", st, body)
	}
	// The session made on the dashboard's listener works there.
	v := newVisitor(t, a)
	v.a = &testapp.App{App: a.App, URL: "http://" + a.DashboardAddr()}
	v.signIn(a.Key)

	off := testapp.Start(t, testapp.WithEnv("MAILROOM_DASHBOARD_ADDR", "off"))
	if st, _ := get(off.URL + "/sign-in"); st != 404 || off.DashboardAddr() != "" {
		t.Fatalf("off: %d %q", st, off.DashboardAddr())
	}
}

// TestDashboardSlowBody: the dashboard's own listener cuts a form trickled
// slower than MAILROOM_HTTP_BODY_TIMEOUT, as the API's does.
func TestDashboardSlowBody(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_DASHBOARD_ADDR", "127.0.0.1:0"), testapp.WithEnv("MAILROOM_HTTP_BODY_TIMEOUT", "1s"))
	c, err := net.Dial("tcp", a.DashboardAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now()
	fmt.Fprint(c, "POST /sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nkey=")
	go func() {
		for {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestTimeout || time.Since(began) > 3*time.Second {
		t.Fatalf("answered %d after %v, want 408 about the 1 s timeout", res.StatusCode, time.Since(began))
	}
}
