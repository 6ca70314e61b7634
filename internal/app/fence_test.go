package app

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/testkit/wait"
)

// TestNodeFencesWithoutHeartbeat (#39 item 2): a node whose heartbeat
// fails stops its work (its liveness context ends) within 3/5 of the node
// timeout, before the others may give it up, and starts again when a
// heartbeat gets through; one that learns it was given up stops what still
// ran and rejoins.
func TestNodeFencesWithoutHeartbeat(t *testing.T) {
	db, err := store.Open(context.Background(), testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const timeout = time.Second
	n := newNode(db, timeout, false, slog.New(slog.DiscardHandler))
	var failing, givenUp atomic.Bool
	n.beat = func(ctx context.Context, id, host string, pid int) (bool, error) {
		if failing.Load() {
			return false, errors.New("database unreachable")
		}
		created, err := db.Beat(ctx, id, host, pid)
		return created || givenUp.Swap(false), err
	}
	if err := n.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer n.close(context.Background())
	live := n.Live()
	failing.Store(true)
	lost := time.Now()
	select {
	case <-live.Done():
		if took := time.Since(lost); took > timeout {
			t.Fatalf("fenced after %v, later than the node timeout %v", took, timeout)
		}
	case <-time.After(2 * timeout):
		t.Fatal("a node without heartbeat kept delivering")
	}
	failing.Store(false)
	wait.For(t, 2*timeout, func() bool { return n.Live().Err() == nil }, "the node never came back after its heartbeat did")
	// Told by its heartbeat that it was given up: what ran stops, it rejoins.
	before := n.Live()
	givenUp.Store(true)
	select {
	case <-before.Done():
	case <-time.After(2 * timeout):
		t.Fatal("a node given up kept its work running")
	}
	wait.For(t, 2*timeout, func() bool { return n.Live().Err() == nil }, "the node never rejoined")
}
