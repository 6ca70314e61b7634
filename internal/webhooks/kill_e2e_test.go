package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/app"
	"mailroom/internal/clock"
	"mailroom/internal/config"
	"mailroom/internal/events"
	"mailroom/internal/secretbox"
	"mailroom/internal/store"
	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/webhooks"
	"mailroom/internal/workspaces"
)

// TestKill9DeliversAfterRestart runs the real binary: events are raised
// (some before it starts, some while it runs), the server is killed with
// SIGKILL while deliveries are in flight and others are not yet made, and
// after a restart every event reaches the endpoint. The in-flight ones come
// back when their lease ends, so this takes about webhooks.Lease.
func TestKill9DeliversAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and waits for a lease to end")
	}
	t.Parallel()
	bin := binary.Build(t)
	dataDir := t.TempDir()
	env := map[string]string{
		"MAILROOM_DATABASE_URL":          testdb.URL(t),
		"MAILROOM_DATA_DIR":              dataDir,
		"MAILROOM_SECRET_KEY":            "kill-test-secret-key-0123456789",
		"MAILROOM_WEBHOOK_ALLOW_PRIVATE": "true",
		"MAILROOM_SMTP_ADDR":             "off",
		"MAILROOM_LOG_LEVEL":             "warn",
	}
	cfg, err := config.Load(config.Map(env))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// The receiver answers the first 40 requests, then holds every request
	// open until the test ends: those are in flight when the node dies.
	var mu sync.Mutex
	got := map[string]int{}
	requests := 0
	healthy := false
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var env struct {
			ID string `json:"id"`
		}
		json.Unmarshal(body, &env)
		mu.Lock()
		requests++
		n, ok := requests, healthy
		mu.Unlock()
		if !ok && n > 40 {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
			w.WriteHeader(503)
			return
		}
		mu.Lock()
		got[env.ID]++
		mu.Unlock()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	// Before the first start: a workspace, an endpoint and 300 events,
	// written straight into the database.
	db, err := app.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := workspaces.New(db, clock.Real{}).CreateWorkspace(ctx, "Kill", "k@example.com", true)
	if err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New(env["MAILROOM_SECRET_KEY"])
	if err != nil {
		t.Fatal(err)
	}
	svc := webhooks.New(webhooks.Options{DB: db, Box: box, AllowPrivate: true})
	if _, err := svc.Create(ctx, w.ID, webhooks.CreateParams{URL: "http://" + ln.Addr().String() + "/hooks"}); err != nil {
		t.Fatal(err)
	}
	var want []string
	raise := func(count int) {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := range count {
				ev, err := events.Raise(ctx, tx, events.Event{WorkspaceID: w.ID, EmailID: fmt.Sprintf("em_%d", i),
					Type: events.EmailDelivered, CreatedAt: time.Now(), Data: map[string]any{"n": i}})
				if err != nil {
					return err
				}
				want = append(want, ev.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	raise(300)

	start := func() *exec.Cmd {
		environ := append(os.Environ(), "MAILROOM_HTTP_ADDR="+binary.FreeAddr(t))
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		return binary.Serve(t, bin, environ, testWriter{t})
	}
	count := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return requests, len(got)
	}

	first := start()
	testapp.Eventually(t, 30*time.Second, func() bool { n, _ := count(); return n > 45 }, "deliveries never started")
	// Raised while the node runs, just before it dies.
	raise(100)
	// The node has taken them up once the last one is fanned out to the
	// endpoint (a delivery row exists for it).
	last := want[len(want)-1]
	testapp.Eventually(t, 10*time.Second, func() bool {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE event_id = ?`, last).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}, "the events raised while the node ran were never fanned out")
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	_, before := count()
	if before >= len(want) {
		t.Fatalf("everything was delivered before the kill (%d)", before)
	}
	db.Close()

	mu.Lock()
	healthy = true
	mu.Unlock()
	second := start()
	testapp.Eventually(t, webhooks.Lease+30*time.Second, func() bool {
		_, n := count()
		return n >= len(want)
	}, "after restart %d of %d events delivered", func() int { _, n := count(); return n }(), len(want))
	mu.Lock()
	for _, id := range want {
		if got[id] == 0 {
			t.Errorf("event %s never delivered", id)
		}
	}
	mu.Unlock()
	second.Process.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		t.Fatalf("serve did not exit cleanly: %v", err)
	}
	t.Logf("%d events: %d delivered before the kill, the rest after the restart", len(want), before)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
