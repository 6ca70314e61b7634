package automations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"mailroom/internal/store"
	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/wait"
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
	node := binary.Start(t,
		"MAILROOM_JOB_RESCUE_AFTER=3s",
		"MAILROOM_NODE_TIMEOUT=2s",
	)
	key := node.Workspace("Kill", "owner@example.com")
	call := func(method, path string, body any) map[string]any {
		t.Helper()
		return node.Call(key, method, path, body)
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

	db, err := store.Open(context.Background(), node.Getenv("MAILROOM_DATABASE_URL"))
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
	wait.Until(60*time.Second, func() bool { return count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'waiting'`) >= n/10 })
	node.Kill()
	atKill := count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'completed'`)
	sent := count(`SELECT COUNT(*) FROM automation_run_steps WHERE type = 'send'`)
	if sent >= n || atKill >= n {
		t.Fatalf("every run had sent before the kill (%d sent, %d completed); the test proves nothing", sent, atKill)
	}

	node.Restart()
	defer node.Stop()
	wait.Until(90*time.Second, func() bool { return count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'completed'`) >= n })
	t.Logf("killed with %d runs completed and %d sends done; after the restart %d runs completed",
		atKill, sent, count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'completed'`))
	if c := count(`SELECT COUNT(*) FROM automation_runs`); c != n {
		t.Errorf("%d runs for %d tag changes", c, n)
	}
	if c := count(`SELECT COUNT(*) FROM automation_runs WHERE status = 'completed' AND emails_sent = 1 AND seq = 3`); c != n {
		t.Errorf("%d of %d runs completed with one email and three steps\n%s", c, n, node.Logs.String())
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
