package delivery

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLaneRunsOnItsSlots: a lane runs every delivery handed to it, never
// more at once than its slots, on workers that stay for the next one (a
// delivery after another finished starts no new worker), and a cancelled
// context stops the wait for a slot.
func TestLaneRunsOnItsSlots(t *testing.T) {
	l := newLane(3)
	ctx := context.Background()
	var running, most, done atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		if err := l.run(ctx, func() {
			defer wg.Done()
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			done.Add(1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if done.Load() != 50 || most.Load() > 3 {
		t.Fatalf("ran %d of 50, at most %d at once (3 slots)", done.Load(), most.Load())
	}
	if len(l.slots) != 3 {
		t.Fatalf("%d workers after the run, want the 3 that ran it, idle", len(l.slots))
	}
	for range 5 { // one at a time: each goes to an idle worker
		wg.Add(1)
		if err := l.run(ctx, wg.Done); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
	if len(l.slots) != 3 {
		t.Fatalf("%d workers, want still 3", len(l.slots))
	}

	busy := newLane(1)
	hold := make(chan struct{})
	if err := busy.run(ctx, func() { <-hold }); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := busy.run(cctx, func() { t.Error("ran without a slot") }); err == nil {
		t.Fatal("run on a full lane returned before its context ended")
	}
	close(hold)
}
