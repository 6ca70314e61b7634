package delivery_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/outbound"
	"mailroom/internal/store"
	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/testkit/wait"
)

// TestCrashMidDeliveryLosesNothing runs the real binary, kills it with
// SIGKILL while it delivers a few thousand emails, starts it again and
// checks that every email reached the sink at least once.
func TestCrashMidDeliveryLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const n = 3000
	dir := t.TempDir()
	bin := binary.Build(t)
	sink := smtpsink.Start(t)
	dbURL := testdb.URL(t)
	env := append(os.Environ(),
		"MAILROOM_DATABASE_URL="+dbURL,
		"MAILROOM_HTTP_ADDR=127.0.0.1:0",
		"MAILROOM_SMTP_ADDR=off",
		"MAILROOM_SECRET_KEY=test-secret-key-0123456789",
		"MAILROOM_SERVICE_DOMAIN=mailroom.test",
		"MAILROOM_DATA_DIR="+dir,
		"MAILROOM_OUTBOUND=smtp://"+sink.Addr(),
		"MAILROOM_JOB_RESCUE_AFTER=3s",
		"MAILROOM_LOG_LEVEL=warn",
	)
	ctx := context.Background()

	// Migrate and accept the emails as the sending area would: rows and
	// their jobs in the same transactions.
	migrate := exec.Command(bin, "migrate")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := jobs.New(db, jobs.Options{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for batch := 0; batch < n/500; batch++ {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			now := store.Millis(time.Now())
			for i := 0; i < 500; i++ {
				id := ids.New("em")
				want[id] = true
				if _, err := tx.Exec(ctx, `INSERT INTO emails (id, workspace_id, status, from_addr, to_addrs, subject, text_body, created_at, updated_at)
					VALUES (?, 'ws_crash', 'queued', 'onboarding@mailroom.test', ?, 'crash', 'hello', ?, ?)`,
					id, fmt.Sprintf(`["user%d@example.net"]`, batch*500+i), now, now); err != nil {
					return err
				}
				tx.AddJob(jobs.DeliverArgs{EmailID: id, WorkspaceID: "ws_crash"})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	start := func() (*exec.Cmd, *bytes.Buffer) {
		var logs bytes.Buffer
		return binary.Serve(t, bin, env, &logs), &logs
	}
	began := time.Now()
	first, _ := start()
	sink.WaitFor(n/3, 20*time.Second) // the sink signals each message
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	atKill := sink.Count()
	t.Logf("killed after %d of %d messages reached the sink (%v)", atKill, n, time.Since(began).Round(time.Millisecond))
	if atKill >= n {
		t.Fatalf("everything was delivered before the kill; the test proves nothing")
	}

	second, logs := start()
	defer func() {
		second.Process.Signal(syscall.SIGTERM)
		second.Wait()
	}()
	var open int
	if !wait.Until(60*time.Second, func() bool {
		if err := db.QueryRow(ctx, `SELECT count(*) FROM emails WHERE status IN ('queued', 'sending')`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		return open == 0
	}) {
		t.Fatalf("%d emails still not final after the restart\n%s", open, logs.String())
	}

	seen := map[string]int{}
	for _, m := range sink.Messages() {
		id, ok := outbound.UnverifiedVERPID(m.From)
		if !ok {
			t.Fatalf("message with return path %q", m.From)
		}
		seen[id]++
	}
	missing, dups := 0, 0
	for id := range want {
		switch c := seen[id]; {
		case c == 0:
			missing++
		case c > 1:
			dups += c - 1
		}
	}
	var statuses []string
	rows, _ := db.Query(ctx, `SELECT status, count(*) FROM emails GROUP BY status`)
	for rows.Next() {
		var s string
		var c int
		rows.Scan(&s, &c)
		statuses = append(statuses, fmt.Sprintf("%s=%d", s, c))
	}
	rows.Close()
	t.Logf("after restart: %d messages at the sink for %d emails, %d duplicates, %d missing, statuses %s, total %v",
		sink.Count(), n, dups, missing, strings.Join(statuses, " "), time.Since(began).Round(time.Millisecond))
	if missing > 0 {
		t.Errorf("%d accepted emails never reached the sink", missing)
	}
	var delivered int
	db.QueryRow(ctx, `SELECT count(*) FROM emails WHERE status = 'delivered'`).Scan(&delivered)
	if delivered != n {
		t.Errorf("%d of %d emails delivered", delivered, n)
	}
}
