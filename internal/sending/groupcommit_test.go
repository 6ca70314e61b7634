package sending

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// openWithT opens the database at url with a table t for the committer's
// writes (insertT) to fill.
func openWithT(t *testing.T, url string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(ctx, `CREATE TABLE t (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func insertT(ctx context.Context, tx *store.Tx) error {
	_, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (1)`)
	return err
}

// gatedInsert is insertT once gate is closed: it holds its commit open.
func gatedInsert(gate chan struct{}) writeFunc {
	return func(ctx context.Context, tx *store.Tx) error { <-gate; return insertT(ctx, tx) }
}

// answered reports whether every ch answers within d (failing the test on
// an error).
func answered(t *testing.T, chs []chan error, d time.Duration) bool {
	t.Helper()
	deadline := time.After(d)
	for _, ch := range chs {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			return false
		}
	}
	return true
}

// rowsInT counts the rows the writes left in t.
func rowsInT(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The committer waits for a fuller batch only under load (see gatherMore):
// after a small batch a lone write is committed at once; after a batch of
// at least gatherMore/2 the next one is held until gatherMore writes have
// come (or gatherWait has passed, here an hour, so that only the count can
// release it).
func TestGroupCommitWaitsForMoreOnlyUnderLoad(t *testing.T) {
	ctx := context.Background()
	db := openWithT(t, filepath.Join(t.TempDir(), "gc.db"))
	reg := prometheus.NewRegistry()
	g := newGroupWriter(db, slog.New(slog.NewTextHandler(io.Discard, nil)), 1, reg)
	g.wait = time.Hour
	g.start(ctx)
	t.Cleanup(g.shutdown)

	// batchOf commits n writes as one batch: they queue while a write
	// holding the committer blocks, so the next batch takes all of them.
	batchOf := func(n int) {
		t.Helper()
		gate := make(chan struct{})
		held := g.submit(gatedInsert(gate), nil)
		time.Sleep(20 * time.Millisecond) // the committer is inside the gate's write
		var chs []chan error
		for range n {
			chs = append(chs, g.submit(insertT, nil))
		}
		close(gate)
		for _, ch := range append(chs, held) {
			if !answered(t, []chan error{ch}, 10*time.Second) {
				t.Fatal("a write of the batch was never answered")
			}
		}
	}
	// commits answers how many commits there were and how many writes
	// they held.
	commits := func() (n uint64, writes float64) {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "mailroom_group_commit_writes" {
				h := mf.GetMetric()[0].GetHistogram()
				return h.GetSampleCount(), h.GetSampleSum()
			}
		}
		t.Fatal("no writes histogram")
		return 0, 0
	}

	batchOf(3)
	if !answered(t, []chan error{g.submit(insertT, nil)}, 10*time.Second) {
		t.Fatal("after a batch of 3, a lone write was held for more")
	}

	batchOf(gatherMore / 2)
	n0, w0 := commits()
	first := g.submit(insertT, nil)
	if answered(t, []chan error{first}, 200*time.Millisecond) {
		t.Fatalf("after a batch of %d, a lone write was committed without waiting for more", gatherMore/2)
	}
	rest := make([]chan error, gatherMore-1)
	for i := range rest {
		rest[i] = g.submit(insertT, nil)
	}
	for _, ch := range append(rest, first) {
		if !answered(t, []chan error{ch}, 10*time.Second) {
			t.Fatalf("%d writes were queued, yet the batch was not committed", gatherMore)
		}
	}
	if n, w := commits(); n-n0 != 1 || w-w0 != gatherMore {
		t.Errorf("the held write and the %d after it took %d commits of %v writes, want one of %d", gatherMore-1, n-n0, w-w0, gatherMore)
	}
	if n, want := rowsInT(t, db), 1+3+1+1+gatherMore/2+gatherMore; n != want {
		t.Errorf("%d rows, want %d", n, want)
	}
}

// On PostgreSQL a second commit starts while one is in flight only once
// pipeMin writes are waiting, and a third never: the writes queued behind
// two blocked commits wait for one of them.
func TestPostgresCommitsTwoFullBatchesAtOnce(t *testing.T) {
	if !testdb.IsPostgres() {
		t.Skip("PostgreSQL only (MAILROOM_TEST_DATABASE_URL)")
	}
	ctx := context.Background()
	db := openWithT(t, testdb.URL(t))
	g := newGroupWriter(db, slog.New(slog.NewTextHandler(io.Discard, nil)), 1, prometheus.NewRegistry())
	g.start(ctx)
	t.Cleanup(g.shutdown)

	submit := func(n int) []chan error {
		var chs []chan error
		for range n {
			chs = append(chs, g.submit(insertT, nil))
		}
		return chs
	}

	gateA, gateB := make(chan struct{}), make(chan struct{})
	var openA, openB sync.Once
	releaseA, releaseB := func() { openA.Do(func() { close(gateA) }) }, func() { openB.Do(func() { close(gateB) }) }
	t.Cleanup(func() { releaseA(); releaseB() }) // before shutdown, even when the test fails
	heldA := g.submit(gatedInsert(gateA), nil)
	time.Sleep(50 * time.Millisecond) // commit A is in flight, inside the gate
	few := submit(pipeMin - 1)
	if answered(t, few[:1], 300*time.Millisecond) {
		t.Fatalf("%d writes waiting behind a commit in flight were committed; want them held for %d", pipeMin-1, pipeMin)
	}
	if !answered(t, append(few, submit(1)...), 10*time.Second) {
		t.Fatalf("%d writes waited while commit A was in flight, yet no second commit started", pipeMin)
	}

	heldB := g.submit(gatedInsert(gateB), nil)
	withB := submit(pipeMin - 1) // commit B: the gated write and these
	time.Sleep(50 * time.Millisecond)
	third := submit(pipeMin)
	if answered(t, third[:1], 300*time.Millisecond) {
		t.Fatal("a third commit started while two were in flight")
	}
	releaseA()
	if !answered(t, append([]chan error{heldA}, third...), 10*time.Second) {
		t.Fatal("commit A ended, yet the writes behind it were not committed")
	}
	releaseB()
	if !answered(t, append([]chan error{heldB}, withB...), 10*time.Second) {
		t.Fatal("commit B was never answered")
	}
	if n, want := rowsInT(t, db), 1+pipeMin+pipeMin+pipeMin; n != want {
		t.Errorf("%d rows, want %d", n, want)
	}
}
