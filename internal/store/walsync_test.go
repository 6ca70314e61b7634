package store

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/testkit/wait"
)

// A commit is not reported (Commit does not return, CommitLater's wait does
// not) until a flush of the WAL that began after it has ended; commits that
// wait together share one flush.
func TestCommitWaitsForTheWALFlush(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "sync.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var started, flushes atomic.Int64
	db.wal.sync = func(f *os.File) error {
		started.Add(1)
		<-release
		flushes.Add(1)
		return f.Sync()
	}
	insert := func(id string) func(tx *Tx) error {
		return func(tx *Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO workspaces (id, name, owner_email, owner_confirmed, created_at) VALUES (?, ?, ?, ?, ?)`, id, "n", "o@x.io", 1, 1)
			return err
		}
	}

	// Three commits; the first one's flush is held.
	done := make(chan error, 3)
	go func() { done <- db.InTx(ctx, insert("ws_a")) }()
	waitFor(t, func() bool { return started.Load() == 1 })
	wait2, err := db.InTxLater(ctx, insert("ws_b")) // commits while the flush is held
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- wait2() }()
	go func() { done <- db.InTx(ctx, insert("ws_c")) }()
	select {
	case err := <-done:
		t.Fatalf("a commit was reported before its flush ended (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	// The rows are committed (a reader sees them) but nobody was told.
	var n int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM workspaces`).Scan(&n); err != nil || n < 2 {
		t.Fatalf("count %d, %v", n, err)
	}

	close(release)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// The first flush began before ws_b and ws_c committed: they needed a
	// second, which they shared.
	if got := flushes.Load(); got != 2 {
		t.Fatalf("%d flushes for three commits, want 2", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	wait.For(t, 5*time.Second, cond, "the condition never held")
}
