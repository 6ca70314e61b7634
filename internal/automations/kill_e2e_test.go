package automations_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/store"
	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/testdb"
)

// TestKill9MidRuns runs the real binary, starts 500 runs of send → wait
// → tag from one import, kills the node with SIGKILL while runs are
// sending, waiting and tagging, and starts it again: every run completes,
// with exactly one email, one outcome row per step and the wait fired once.
func TestKill9MidRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const n = 500
	bin := binary.Build(t)
	addr := binary.FreeAddr(t)
	dbURL := testdb.URL(t)
	env := append(os.Environ(),
		"MAILROOM_DATABASE_URL="+dbURL,
		"MAILROOM_HTTP_ADDR="+addr,
		"MAILROOM_SMTP_ADDR=off",
		"MAILROOM_SECRET_KEY=test-secret-key-0123456789",
		"MAILROOM_SERVICE_DOMAIN=mailroom.test",
		"MAILROOM_DATA_DIR="+t.TempDir(),
		"MAILROOM_JOB_RESCUE_AFTER=3s",
		"MAILROOM_RATE_LIMIT=100000",
		"MAILROOM_NODE_TIMEOUT=2s",
		"MAILROOM_LOG_LEVEL=warn",
	)
	var logs bytes.Buffer
	first := binary.Serve(t, bin, env, &logs)
	binary.WaitHealthy(t, addr, 20*time.Second, &logs)
	create := exec.Command(bin, "workspace", "create", "--name", "Kill", "--owner-email", "owner@example.com")
	create.Env = env
	out, err := create.Output()
	if err != nil {
		t.Fatalf("workspace create: %v", err)
	}
	var ws struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(out, &ws); err != nil {
		t.Fatal(err)
	}
	call := func(method, path string, body any) map[string]any {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, "http://"+addr+path, rd)
		req.Header.Set("Authorization", "Bearer "+ws.APIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		return m
	}
	call("POST", "/v1/templates", map[string]any{"name": "Hello", "subject": "Hello", "text": "Hi {{ email }}", "publish": true})
	call("POST", "/v1/automations", map[string]any{"yaml": "name: Kill\ntrigger: { event: tag.added, tag: go }\nsteps:\n" +
		"  - send: { template: hello, from: onboarding@mailroom.test }\n  - wait: 2s\n  - tag: { add: [done] }\n"})
	aud := call("POST", "/v1/audiences", map[string]any{"name": "All"})["id"].(string)
	rows := make([]any, n)
	for i := range rows {
		rows[i] = map[string]any{"email": fmt.Sprintf("delivered+k%04d@mailroom.test", i), "tags": []string{"go"}}
	}
	call("POST", "/v1/audiences/"+aud+"/contacts", rows)

	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(q string) int {
		var c int
		if err := db.QueryRow(context.Background(), q).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Kill once some runs have sent and wait while others have not sent yet.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'waiting'`) >= n/10 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	atKill := count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'completed'`)
	sent := count(`SELECT COUNT(*) FROM automation_run_steps WHERE type = 'send'`)
	if sent >= n || atKill >= n {
		t.Fatalf("every run had sent before the kill (%d sent, %d completed); the test proves nothing", sent, atKill)
	}

	second := binary.Serve(t, bin, env, &logs)
	defer func() { second.Process.Signal(syscall.SIGTERM); second.Wait() }()
	binary.WaitHealthy(t, addr, 20*time.Second, &logs)
	deadline = time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'completed'`) < n {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("killed with %d runs completed and %d sends done; after the restart %d runs completed",
		atKill, sent, count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'completed'`))
	if c := count(`SELECT COUNT(*) FROM automation_runs`); c != n {
		t.Errorf("%d runs for %d tag changes", c, n)
	}
	if c := count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'completed' AND emails_sent = 1 AND seq = 3`); c != n {
		t.Errorf("%d of %d runs completed with one email and three steps\n%s", c, n, logs.String())
	}
	if c := count(`SELECT COUNT(*) FROM emails`); c != n {
		t.Errorf("%d emails for %d runs: a send step ran twice or never", c, n)
	}
	if c := count(`SELECT COUNT(DISTINCT email_id) FROM automation_run_steps WHERE type = 'send' AND status = 'completed'`); c != n {
		t.Errorf("%d distinct emails recorded by send steps", c)
	}
	if c := count(`SELECT COUNT(*) FROM automation_run_steps WHERE type = 'wait' AND status = 'completed'`); c != n {
		t.Errorf("%d waits fired, want %d", c, n)
	}
}
