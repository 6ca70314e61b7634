package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/app"
	"mailroom/internal/config"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/testkit/wait"
)

func newNode(t *testing.T, env map[string]string, o app.Options) (*app.App, error) {
	t.Helper()
	base := map[string]string{"MAILROOM_HTTP_ADDR": "127.0.0.1:0", "MAILROOM_SMTP_ADDR": "off", "MAILROOM_DATA_DIR": t.TempDir()}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load(config.Map(base))
	if err != nil {
		t.Fatal(err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a, err := app.New(context.Background(), cfg, o)
	if a != nil {
		t.Cleanup(func() { a.Stop(context.Background()) })
	}
	return a, err
}

// A PostgreSQL node without MAILROOM_SECRET_KEY would generate a key of its
// own that no other node shares: it is refused before it connects.
func TestPostgresNodeNeedsSecretKey(t *testing.T) {
	_, err := newNode(t, map[string]string{"MAILROOM_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}, app.Options{})
	if !errors.Is(err, config.ErrSharedKeyRequired) || !strings.Contains(err.Error(), "set it on every node") {
		t.Fatalf("start without MAILROOM_SECRET_KEY on PostgreSQL: %v", err)
	}
}

// The first node records its key's fingerprint; a node with another key is
// refused with a message that says what to do, one with the same key starts.
func TestNodeWithAnotherSecretKeyIsRefused(t *testing.T) {
	url := testdb.URL(t)
	first, err := newNode(t, map[string]string{"MAILROOM_DATABASE_URL": url, "MAILROOM_SECRET_KEY": "first-key-0123456789abcdef"}, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := first.DB.QueryRow(context.Background(), `SELECT value FROM cluster_settings WHERE name = 'secret_key_fingerprint'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 64 || strings.Contains(stored, "first-key") {
		t.Fatalf("stored fingerprint %q", stored)
	}
	first.Stop(context.Background())

	_, err = newNode(t, map[string]string{"MAILROOM_DATABASE_URL": url, "MAILROOM_SECRET_KEY": "other-key-0123456789abcdef"}, app.Options{})
	if !errors.Is(err, app.ErrSecretKeyMismatch) || !strings.Contains(err.Error(), "set MAILROOM_SECRET_KEY") {
		t.Fatalf("start with another key: %v", err)
	}
	again, err := newNode(t, map[string]string{"MAILROOM_DATABASE_URL": url, "MAILROOM_SECRET_KEY": "first-key-0123456789abcdef"}, app.Options{})
	if err != nil {
		t.Fatalf("start with the first key again: %v", err)
	}
	again.Stop(context.Background())
}

// On SQLite one process owns the file: a second node is refused while the
// first runs, and starts once it stopped.
func TestSecondSQLiteNodeIsRefused(t *testing.T) {
	url := filepath.Join(t.TempDir(), "mailroom.db")
	env := map[string]string{"MAILROOM_DATABASE_URL": url, "MAILROOM_DATA_DIR": filepath.Dir(url)}
	first, err := newNode(t, env, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newNode(t, env, app.Options{}); !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "another `mailroom serve` holds") {
		t.Fatalf("second node on the same SQLite file: %v", err)
	}
	first.Stop(context.Background())
	if _, err := newNode(t, env, app.Options{}); err != nil {
		t.Fatalf("node after the first stopped: %v", err)
	}
}

// /readyz reports a secret key that no longer matches the database's.
func TestReadyzReportsSecretKeyMismatch(t *testing.T) {
	a := testapp.Start(t)
	if r := a.Do(http.MethodGet, "/readyz", nil); r.Status != http.StatusOK {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}
	if _, err := a.DB.Exec(context.Background(), `UPDATE cluster_settings SET value = 'another' WHERE name = 'secret_key_fingerprint'`); err != nil {
		t.Fatal(err)
	}
	r := a.Do(http.MethodGet, "/readyz", nil)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "MAILROOM_SECRET_KEY does not match") {
		t.Fatalf("readyz after the fingerprint changed: %d %s", r.Status, r.Body)
	}
}

// A node whose heartbeat stopped has its running jobs made available and
// its webhook leases released by a live node within about the node
// timeout; a live node's running job and lease are left alone however long
// they take.
func TestGoneNodesWorkIsTakenUpLiveNodesIsNot(t *testing.T) {
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_NODE_TIMEOUT", "1s"))
	ctx := context.Background()
	db := a.DB
	// Jobs on a queue no node works, marked running as River marks a fetched job.
	running := func(by string) int64 {
		t.Helper()
		res, err := a.Queue.Client.Insert(ctx, sending.CleanupArgs{}, &river.InsertOpts{Queue: "parked"})
		if err != nil {
			t.Fatal(err)
		}
		q := `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = datetime('now', 'subsec'), attempted_by = json_array(?) WHERE id = ?`
		if db.Dialect == store.Postgres {
			q = `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY[?::text] WHERE id = ?`
		}
		if _, err := db.Exec(ctx, q, by, res.Job.ID); err != nil {
			t.Fatal(err)
		}
		return res.Job.ID
	}
	goneJob, liveJob := running("node_gone"), running(a.NodeID())
	// Held rows: the pool leaves them alone, so only the release moves them.
	// Their event is recent: the purge of held rows past HoldTTL must not
	// take them meanwhile.
	lease := time.Now().Add(time.Hour).UnixMilli()
	for seq, claim := range map[int]string{1: "node_gone.abc", 2: a.NodeID() + ".def"} {
		if _, err := db.Exec(ctx, `INSERT INTO webhook_deliveries (seq, webhook_id, workspace_id, event_id, event_at, held, attempts, due_at, next_attempt_at, claim)
			VALUES (?, 'wh_x', ?, ?, ?, 1, 0, ?, 5, ?)`, seq, a.WorkspaceID, "whd_"+claim, time.Now().UnixMilli(), lease, claim); err != nil {
			t.Fatal(err)
		}
	}
	// The gone node's row comes last: a reap between its insert and the
	// work's would give the node up before it held anything.
	if _, err := db.Exec(ctx, `INSERT INTO nodes (id, host, pid, started_at, heartbeat_at) VALUES ('node_gone', 'h', 1, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	state := func(id int64) string {
		var s string
		if err := db.QueryRow(ctx, `SELECT state FROM river_job WHERE id = ?`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	testapp.Eventually(t, 10*time.Second, func() bool { return state(goneJob) == "available" }, "the gone node's job is still %s", state(goneJob))
	var claim *string
	var due int64
	if err := db.QueryRow(ctx, `SELECT claim, due_at FROM webhook_deliveries WHERE seq = 1`).Scan(&claim, &due); err != nil {
		t.Fatal(err)
	}
	if claim != nil || due != 5 {
		t.Fatalf("the gone node's lease: claim %v, due_at %d (want released, due at its next attempt)", claim, due)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM nodes WHERE id = 'node_gone'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the gone node's row: %d %v", n, err)
	}

	// The live node beats on past the node timeout (its heartbeat moves on
	// by more than the timeout), and a reap pass after that (a second gone
	// node taken up) leaves its running job and its lease alone.
	heartbeat := func(id string) (at int64) {
		t.Helper()
		if err := db.QueryRow(ctx, `SELECT heartbeat_at FROM nodes WHERE id = ?`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	first := heartbeat(a.NodeID())
	wait.For(t, 10*time.Second, func() bool { return heartbeat(a.NodeID())-first > time.Second.Milliseconds() },
		"the live node's heartbeat stalled at %d", first)
	if _, err := db.Exec(ctx, `INSERT INTO nodes (id, host, pid, started_at, heartbeat_at) VALUES ('node_gone2', 'h', 1, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 10*time.Second, func() bool {
		err := db.QueryRow(ctx, `SELECT count(*) FROM nodes WHERE id = 'node_gone2'`).Scan(&n)
		return err == nil && n == 0
	}, "no reap pass took up the second gone node")
	if s := state(liveJob); s != "running" {
		t.Fatalf("the live node's running job was taken: %s", s)
	}
	if err := db.QueryRow(ctx, `SELECT claim FROM webhook_deliveries WHERE seq = 2`).Scan(&claim); err != nil || claim == nil {
		t.Fatalf("the live node's lease was released: %v %v", claim, err)
	}
}

// The owner of a SQLite database takes up, before its workers start,
// every job and webhook lease a dead process left: nothing waits for a
// timeout after a restart.
func TestSQLiteOwnerTakesUpEverythingAtStart(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"MAILROOM_DATABASE_URL": filepath.Join(dir, "mailroom.db"), "MAILROOM_DATA_DIR": dir,
		"MAILROOM_NODE_TIMEOUT": "1h"} // the heartbeat path would wait an hour
	ctx := context.Background()
	dead, err := newNode(t, env, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := dead.Queue.Client.Insert(ctx, sending.CleanupArgs{}, &river.InsertOpts{Queue: "parked"})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO nodes (id, host, pid, started_at, heartbeat_at) VALUES ('node_dead', 'h', 1, 0, ` + fmt.Sprint(time.Now().UnixMilli()) + `)`,
		`UPDATE river_job SET state = 'running', attempt = 1, attempted_at = datetime('now', 'subsec'), attempted_by = json_array('node_dead') WHERE id = ` + fmt.Sprint(res.Job.ID),
		`INSERT INTO river_leader (elected_at, expires_at, leader_id, name) VALUES (datetime('now'), datetime('now', '+1 hour'), 'node_dead', 'default')`,
		`INSERT INTO webhook_deliveries (webhook_id, workspace_id, event_id, event_at, held, attempts, due_at, next_attempt_at, claim)
			VALUES ('wh_x', 'ws_x', 'whd_x', ` + fmt.Sprint(time.Now().UnixMilli()) + `, 1, 0, ` + fmt.Sprint(time.Now().Add(time.Hour).UnixMilli()) + `, 5, 'node_dead.abc')`, // a recent event: the purge of held rows past HoldTTL leaves it
	} {
		if _, err := dead.DB.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dead.Stop(ctx) // as if killed: never started, so it left the rows as they are

	owner, err := newNode(t, env, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var state string
	var claim *string
	var nodes, leaders int
	if err := owner.DB.QueryRow(ctx, `SELECT state FROM river_job WHERE id = ?`, res.Job.ID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if err := owner.DB.QueryRow(ctx, `SELECT claim FROM webhook_deliveries WHERE event_id = 'whd_x'`).Scan(&claim); err != nil {
		t.Fatal(err)
	}
	if err := owner.DB.QueryRow(ctx, `SELECT count(*) FROM nodes WHERE id = 'node_dead'`).Scan(&nodes); err != nil {
		t.Fatal(err)
	}
	if err := owner.DB.QueryRow(ctx, `SELECT count(*) FROM river_leader WHERE leader_id = 'node_dead'`).Scan(&leaders); err != nil {
		t.Fatal(err)
	}
	if state != "available" || claim != nil || nodes != 0 || leaders != 0 {
		t.Fatalf("after the owner started: job %s, claim %v, dead node rows %d, its leaderships %d", state, claim, nodes, leaders)
	}
}
