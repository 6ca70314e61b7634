package groupcommit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
	"mailroom/internal/testkit/wait"
)

// Every case runs under both isolation strategies: what a caller may rely
// on holds for both; where they differ (how often a write runs), the case
// says which.
var strategies = []struct {
	name string
	iso  Isolation
}{
	{"RetryAlone", RetryAlone},
	{"Savepoint", Savepoint},
	{"Optimistic", Optimistic},
}

// bundle is one committer on its own database with a table t (n INTEGER).
type bundle struct {
	db  *store.DB
	c   *Committer[int]
	reg *prometheus.Registry
	log *syncBuffer
}

func setup(t *testing.T, cfg Config[int]) *bundle {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(ctx, `CREATE TABLE t (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	b := &bundle{db: db, reg: prometheus.NewRegistry(), log: &syncBuffer{}}
	cfg.DB, cfg.Registry, cfg.Name = db, b.reg, "test"
	cfg.Log = slog.New(slog.NewTextHandler(b.log, nil))
	b.c = New(cfg)
	return b
}

func (b *bundle) start(t *testing.T) {
	t.Helper()
	if err := b.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.c.Stop)
}

// insert is a write that adds row n to t.
func insert(n int) Func {
	return func(ctx context.Context, tx *store.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (?)`, n)
		return err
	}
}

// gated is insert(n) once gate is closed; it closes entered when the
// committer is inside it, holding its commit open.
func gated(n int, entered, gate chan struct{}) Func {
	return func(ctx context.Context, tx *store.Tx) error {
		close(entered)
		<-gate
		return insert(n)(ctx, tx)
	}
}

// hold queues a gated write and waits until the committer is inside it;
// the returned func releases it and answers its result channel.
func (b *bundle) hold(t *testing.T) (release func() <-chan error) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ch := b.c.Submit(0, gated(0, entered, gate))
	t.Cleanup(func() { once.Do(func() { close(gate) }) })
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the committer never ran the gated write")
	}
	return func() <-chan error { once.Do(func() { close(gate) }); return ch }
}

// answers waits for every ch, returning their results (failing after d).
func answers(t *testing.T, chs []<-chan error, d time.Duration) []error {
	t.Helper()
	deadline := time.After(d)
	out := make([]error, len(chs))
	for i, ch := range chs {
		select {
		case out[i] = <-ch:
		case <-deadline:
			t.Fatalf("write %d of %d was not answered within %s", i, len(chs), d)
		}
	}
	return out
}

// answered reports whether every ch answers nil within d.
func answered(t *testing.T, chs []<-chan error, d time.Duration) bool {
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

// rows lists the values in t, sorted.
func (b *bundle) rows(t *testing.T) []int {
	t.Helper()
	rs, err := b.db.Query(context.Background(), `SELECT n FROM t ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []int
	for rs.Next() {
		var n int
		if err := rs.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// commits answers how many commits the committer made and how many writes
// they held, and how many batches fell back to single writes.
func (b *bundle) commits(t *testing.T) (n uint64, writes, fallbacks float64) {
	t.Helper()
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "mailroom_group_commit_writes":
			h := mf.GetMetric()[0].GetHistogram()
			n, writes = h.GetSampleCount(), h.GetSampleSum()
		case "mailroom_group_commit_fallbacks_total":
			fallbacks = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return n, writes, fallbacks
}

// reruns answers how many Optimistic batches ran again without a failed write.
func (b *bundle) reruns(t *testing.T) float64 {
	t.Helper()
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "mailroom_group_commit_reruns_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

var errBad = errors.New("a bad write")

func TestCommitter(t *testing.T) {
	for _, st := range strategies {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()

			t.Run("WritesQueuedMeanwhileShareOneCommit", func(t *testing.T) {
				b := setup(t, Config[int]{Isolation: st.iso})
				b.start(t)
				release := b.hold(t)
				var chs []<-chan error
				for i := 1; i <= 10; i++ {
					chs = append(chs, b.c.Submit(i, insert(i)))
				}
				held := release()
				for i, err := range answers(t, append(chs, held), 10*time.Second) {
					if err != nil {
						t.Fatalf("write %d: %v", i, err)
					}
				}
				if n, w, _ := b.commits(t); n != 2 || w != 11 {
					t.Errorf("%d commits of %v writes, want the gated one and then one of 10", n, w)
				}
				if got := b.rows(t); len(got) != 11 {
					t.Errorf("rows %v, want 0 to 10", got)
				}
			})

			t.Run("AFailingWriteFailsAlone", func(t *testing.T) {
				b := setup(t, Config[int]{Isolation: st.iso})
				b.start(t)
				var runs [6]atomic.Int32
				release := b.hold(t)
				var chs []<-chan error
				for i := 1; i <= 5; i++ {
					chs = append(chs, b.c.Submit(i, func(ctx context.Context, tx *store.Tx) error {
						runs[i].Add(1)
						if err := insert(i)(ctx, tx); err != nil {
							return err
						}
						if i == 3 {
							return errBad
						}
						return nil
					}))
				}
				release()
				errs := answers(t, chs, 10*time.Second)
				for i, err := range errs {
					if want := i+1 == 3; errors.Is(err, errBad) != want || (!want && err != nil) {
						t.Errorf("write %d answered %v", i+1, err)
					}
				}
				if got, want := b.rows(t), []int{0, 1, 2, 4, 5}; !slices.Equal(got, want) {
					t.Errorf("rows %v, want %v: the failed write's row must be gone, the others kept", got, want)
				}
				// RetryAlone runs the writes again, alone (those up to the
				// failing one had run in the batch too); a savepoint keeps a write
				// from ever running twice; Optimistic runs the batch again
				// without the failed write, so those before it run twice.
				wantFallbacks, wantReruns := 0.0, 0.0
				switch st.iso {
				case RetryAlone:
					wantFallbacks = 1
				case Optimistic:
					wantReruns = 1
				}
				for i := 1; i <= 5; i++ {
					want := int32(1)
					if st.iso == RetryAlone && i <= 3 || st.iso == Optimistic && i < 3 {
						want = 2
					}
					if runs[i].Load() != want {
						t.Errorf("write %d ran %d times, want %d", i, runs[i].Load(), want)
					}
				}
				if _, _, f := b.commits(t); f != wantFallbacks {
					t.Errorf("%v fallbacks to single writes, want %v", f, wantFallbacks)
				}
				if r := b.reruns(t); r != wantReruns {
					t.Errorf("%v reruns, want %v", r, wantReruns)
				}
			})

			t.Run("ADeadlockVictimRunsAgainAlone", func(t *testing.T) {
				b := setup(t, Config[int]{Isolation: st.iso})
				b.start(t)
				var victim atomic.Int32
				release := b.hold(t)
				var chs []<-chan error
				for i := 1; i <= 5; i++ {
					chs = append(chs, b.c.Submit(i, func(ctx context.Context, tx *store.Tx) error {
						if err := insert(i)(ctx, tx); err != nil {
							return err
						}
						if i == 3 && victim.Add(1) == 1 {
							return errors.New("ERROR: deadlock detected (SQLSTATE 40P01)")
						}
						return nil
					}))
				}
				release()
				for i, err := range answers(t, chs, 10*time.Second) {
					if err != nil {
						t.Errorf("write %d answered %v; a deadlock victim must run again, not fail its caller", i+1, err)
					}
				}
				if got, want := b.rows(t), []int{0, 1, 2, 3, 4, 5}; !slices.Equal(got, want) {
					t.Errorf("rows %v, want %v: each write once", got, want)
				}
			})

			t.Run("AFailedWriteLeavesNothingDeferred", func(t *testing.T) {
				b := setup(t, Config[int]{Isolation: st.iso})
				b.start(t)
				var after sync.Map
				deferred := func(n int, fail bool) Func {
					return func(ctx context.Context, tx *store.Tx) error {
						tx.DeferInsert("t", []string{"n"}, n)
						tx.AfterCommit(func() { after.Store(n, true) })
						if fail {
							return errBad
						}
						return nil
					}
				}
				release := b.hold(t)
				chs := []<-chan error{b.c.Submit(1, deferred(1, false)), b.c.Submit(2, deferred(2, true)), b.c.Submit(3, deferred(3, false))}
				release()
				errs := answers(t, chs, 10*time.Second)
				if errs[0] != nil || !errors.Is(errs[1], errBad) || errs[2] != nil {
					t.Fatalf("answers %v, want nil, errBad, nil", errs)
				}
				if got, want := b.rows(t), []int{0, 1, 3}; !slices.Equal(got, want) {
					t.Errorf("rows %v, want %v: the failed write's deferred insert must not be written", got, want)
				}
				if _, ran := after.Load(2); ran {
					t.Error("the failed write's after-commit function ran")
				}
				if _, ran := after.Load(3); !ran {
					t.Error("a committed write's after-commit function did not run")
				}
			})

			t.Run("APanickingWriteIsAnError", func(t *testing.T) {
				b := setup(t, Config[int]{Isolation: st.iso})
				b.start(t)
				release := b.hold(t)
				bad := b.c.Submit(1, func(context.Context, *store.Tx) error { panic("boom") })
				good := b.c.Submit(2, insert(2))
				release()
				errs := answers(t, []<-chan error{bad, good}, 10*time.Second)
				if errs[0] == nil || !strings.Contains(errs[0].Error(), "boom") || errs[1] != nil {
					t.Fatalf("answers %v, want the panic's error, then nil", errs)
				}
				if got, want := b.rows(t), []int{0, 2}; !slices.Equal(got, want) {
					t.Errorf("rows %v, want %v", got, want)
				}
			})

			t.Run("WithoutACommitterAWriteCommitsAlone", func(t *testing.T) {
				b := setup(t, Config[int]{Isolation: st.iso})
				if !answered(t, []<-chan error{b.c.Submit(1, insert(1))}, 10*time.Second) {
					t.Fatal("a write before Start was not committed")
				}
				b.start(t)
				b.c.Stop()
				b.c.Stop() // harmless
				if err := b.c.Do(context.Background(), 2, insert(2)); err != nil {
					t.Fatal(err)
				}
				if err := b.c.Start(context.Background()); !errors.Is(err, ErrStopped) {
					t.Errorf("Start after Stop: %v, want ErrStopped", err)
				}
				if got, want := b.rows(t), []int{1, 2}; !slices.Equal(got, want) {
					t.Errorf("rows %v, want %v", got, want)
				}
			})

			t.Run("StopCommitsWhatIsQueued", func(t *testing.T) {
				b := setup(t, Config[int]{Isolation: st.iso})
				b.start(t)
				release := b.hold(t)
				var chs []<-chan error
				for i := 1; i <= 20; i++ {
					chs = append(chs, b.c.Submit(i, insert(i)))
				}
				b.c.Go(21, insert(21))
				stopped := make(chan struct{})
				go func() { b.c.Stop(); close(stopped) }()
				chs = append(chs, release())
				<-stopped
				// Stop has returned: every answer is already there.
				for i, ch := range chs {
					select {
					case err := <-ch:
						if err != nil {
							t.Fatalf("write %d: %v", i, err)
						}
					default:
						t.Fatalf("Stop returned before write %d was answered", i)
					}
				}
				if got := b.rows(t); len(got) != 22 {
					t.Errorf("%d rows, want 22", len(got))
				}
			})

			t.Run("AFailureNobodyWaitsForIsLogged", func(t *testing.T) {
				b := setup(t, Config[int]{Isolation: st.iso})
				b.start(t)
				b.c.Go(1, func(context.Context, *store.Tx) error { return errBad })
				b.c.Stop()
				if !strings.Contains(b.log.String(), errBad.Error()) {
					t.Errorf("log %q does not name the failure", b.log.String())
				}
			})

			t.Run("HooksWrapEveryRunAndEndedMayRunItAgain", func(t *testing.T) {
				errAgain := errors.New("run me again")
				var mu sync.Mutex
				var seen [][]int
				var attempts []int
				var runs atomic.Int32
				b := setup(t, Config[int]{Isolation: st.iso, Hooks: Hooks[int]{
					Wrap: func(ctx context.Context, tx *store.Tx, bt *Batch[int], run func(context.Context) error) error {
						if err := run(ctx); err != nil {
							return err
						}
						mu.Lock()
						defer mu.Unlock()
						seen, attempts = append(seen, slices.Clone(bt.Items)), append(attempts, bt.Attempt)
						if bt.Attempt == 0 && len(bt.Items) > 1 {
							return errAgain
						}
						return nil
					},
					Ended: func(bt *Batch[int], err error) bool { return errors.Is(err, errAgain) },
				}})
				b.start(t)
				release := b.hold(t)
				var chs []<-chan error
				for i := 1; i <= 3; i++ {
					chs = append(chs, b.c.Submit(i, func(ctx context.Context, tx *store.Tx) error { runs.Add(1); return insert(i)(ctx, tx) }))
				}
				release()
				for i, err := range answers(t, chs, 10*time.Second) {
					if err != nil {
						t.Fatalf("write %d: %v", i+1, err)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				want := [][]int{{0}, {1, 2, 3}, {1, 2, 3}}
				if !slices.EqualFunc(seen, want, slices.Equal) || !slices.Equal(attempts, []int{0, 0, 1}) {
					t.Errorf("Wrap saw %v at attempts %v, want %v at 0, 0, 1", seen, attempts, want)
				}
				if runs.Load() != 6 {
					t.Errorf("the writes ran %d times, want twice each", runs.Load())
				}
				if got, want := b.rows(t), []int{0, 1, 2, 3}; !slices.Equal(got, want) {
					t.Errorf("rows %v, want %v", got, want)
				}
			})
		})
	}
}

// An Optimistic batch in which many writes fail runs again without them at
// most optimisticRuns times, then isolates the rest with savepoints: each
// write is still answered with its own result.
func TestOptimisticBatchOfManyFailuresFallsBackToSavepoints(t *testing.T) {
	b := setup(t, Config[int]{Isolation: Optimistic})
	b.start(t)
	var runs [11]atomic.Int32
	release := b.hold(t)
	var chs []<-chan error
	for i := 1; i <= 10; i++ {
		chs = append(chs, b.c.Submit(i, func(ctx context.Context, tx *store.Tx) error {
			runs[i].Add(1)
			if err := insert(i)(ctx, tx); err != nil {
				return err
			}
			if i%2 == 0 {
				return errBad
			}
			return nil
		}))
	}
	release()
	for i, err := range answers(t, chs, 10*time.Second) {
		if want := (i+1)%2 == 0; errors.Is(err, errBad) != want || (!want && err != nil) {
			t.Errorf("write %d answered %v", i+1, err)
		}
	}
	if got, want := b.rows(t), []int{0, 1, 3, 5, 7, 9}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if r := b.reruns(t); r != optimisticRuns {
		t.Errorf("%v reruns, want %d before falling back to savepoints", r, optimisticRuns)
	}
	for i := 1; i <= 10; i++ {
		if n := runs[i].Load(); n > optimisticRuns+1 {
			t.Errorf("write %d ran %d times, want at most %d", i, n, optimisticRuns+1)
		}
	}
}

// The committer waits for a fuller batch only under load (Gather): after a
// small batch a lone write is committed at once; after a batch of at least
// GatherAfter the next one is held until Gather writes have come (or
// GatherWait has passed, here an hour, so that only the count can release
// it). SQLite only: the wait keys on batches that had a flush.
func TestGroupCommitWaitsForMoreOnlyUnderLoad(t *testing.T) {
	if testdb.IsPostgres() {
		t.Skip("SQLite only")
	}
	const more = 32
	b := setup(t, Config[int]{Gather: more, GatherAfter: more / 2, GatherWait: time.Hour})
	b.start(t)

	// batchOf commits n writes as one batch: they queue while a write
	// holding the committer blocks, so the next batch takes all of them.
	batchOf := func(n int) {
		t.Helper()
		release := b.hold(t)
		var chs []<-chan error
		for range n {
			chs = append(chs, b.c.Submit(1, insert(1)))
		}
		if !answered(t, append(chs, release()), 10*time.Second) {
			t.Fatal("a write of the batch was never answered")
		}
	}

	batchOf(3)
	if !answered(t, []<-chan error{b.c.Submit(1, insert(1))}, 10*time.Second) {
		t.Fatal("after a batch of 3, a lone write was held for more")
	}

	batchOf(more / 2)
	n0, w0, _ := b.commits(t)
	first := b.c.Submit(1, insert(1))
	if answered(t, []<-chan error{first}, 200*time.Millisecond) {
		t.Fatalf("after a batch of %d, a lone write was committed without waiting for more", more/2)
	}
	rest := make([]<-chan error, more-1)
	for i := range rest {
		rest[i] = b.c.Submit(1, insert(1))
	}
	if !answered(t, append(rest, first), 10*time.Second) {
		t.Fatalf("%d writes were queued, yet the batch was not committed", more)
	}
	if n, w, _ := b.commits(t); n-n0 != 1 || w-w0 != more {
		t.Errorf("the held write and the %d after it took %d commits of %v writes, want one of %d", more-1, n-n0, w-w0, more)
	}
	if n, want := len(b.rows(t)), 1+3+1+1+more/2+more; n != want {
		t.Errorf("%d rows, want %d", n, want)
	}
}

// On PostgreSQL with Pipeline a second commit starts while one is in flight
// only once Pipeline writes are waiting, and a third never: the writes
// queued behind two blocked commits wait for one of them.
func TestPostgresCommitsTwoFullBatchesAtOnce(t *testing.T) {
	if !testdb.IsPostgres() {
		t.Skip("PostgreSQL only (MAILROOM_TEST_DATABASE_URL)")
	}
	const pipe = 24
	b := setup(t, Config[int]{Pipeline: pipe})
	b.start(t)
	submit := func(n int) []<-chan error {
		var chs []<-chan error
		for range n {
			chs = append(chs, b.c.Submit(1, insert(1)))
		}
		return chs
	}

	releaseA := b.hold(t) // commit A is in flight, inside the gate
	few := submit(pipe - 1)
	if answered(t, few[:1], 300*time.Millisecond) {
		t.Fatalf("%d writes waiting behind a commit in flight were committed; want them held for %d", pipe-1, pipe)
	}
	if !answered(t, append(few, submit(1)...), 10*time.Second) {
		t.Fatalf("%d writes waited while commit A was in flight, yet no second commit started", pipe)
	}

	// Commit B: a gated write and pipe-1 more, queued before its gate opens.
	entered, gateB := make(chan struct{}), make(chan struct{})
	var openB sync.Once
	releaseB := func() { openB.Do(func() { close(gateB) }) }
	t.Cleanup(releaseB)
	heldB := b.c.Submit(1, gated(1, entered, gateB))
	withB := submit(pipe - 1)
	<-entered
	third := submit(pipe)
	if answered(t, third[:1], 300*time.Millisecond) {
		t.Fatal("a third commit started while two were in flight")
	}
	if !answered(t, append([]<-chan error{releaseA()}, third...), 10*time.Second) {
		t.Fatal("commit A ended, yet the writes behind it were not committed")
	}
	releaseB()
	if !answered(t, append([]<-chan error{heldB}, withB...), 10*time.Second) {
		t.Fatal("commit B was never answered")
	}
	if n, want := len(b.rows(t)), 1+pipe+pipe+pipe; n != want {
		t.Errorf("%d rows, want %d", n, want)
	}
}

// A write that PostgreSQL really picks as a deadlock victim runs again once
// the other side has finished, and its caller hears only of its success:
// delivery records outcomes of messages already handed to a mail server,
// and a failure there would send them again.
func TestPostgresDeadlockVictimRunsAgain(t *testing.T) {
	if !testdb.IsPostgres() {
		t.Skip("PostgreSQL only (MAILROOM_TEST_DATABASE_URL): SQLite's one writer never deadlocks")
	}
	for _, st := range strategies {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, Config[int]{Isolation: st.iso})
			if _, err := b.db.Exec(ctx, `CREATE TABLE locks (k INTEGER PRIMARY KEY)`); err != nil {
				t.Fatal(err)
			}
			if _, err := b.db.Exec(ctx, `INSERT INTO locks (k) VALUES (1), (2)`); err != nil {
				t.Fatal(err)
			}
			b.start(t)
			other, err := b.db.W.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback()
			// The other side checks for the deadlock later than the write
			// does, so the write is the victim even on a loaded machine.
			if _, err := other.ExecContext(ctx, `SET LOCAL deadlock_timeout = '30s'`); err != nil {
				t.Fatal(err)
			}
			if _, err := other.ExecContext(ctx, `UPDATE locks SET k = k WHERE k = 1`); err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			ch := b.c.Submit(1, func(ctx context.Context, tx *store.Tx) error {
				if runs.Add(1) == 1 { // its run again takes no lock the other side waits for
					for _, k := range []int{2, 1} {
						if _, err := tx.Exec(ctx, `UPDATE locks SET k = k WHERE k = ?`, k); err != nil {
							return err
						}
					}
				}
				return insert(1)(ctx, tx)
			})
			// Once the write waits for row 1, taking row 2 closes the cycle.
			wait.For(t, 10*time.Second, func() bool {
				var waiting int
				if err := b.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				return waiting > 0
			}, "the write never waited for the other transaction's lock")
			if _, err := other.ExecContext(ctx, `UPDATE locks SET k = k WHERE k = 2`); err != nil {
				t.Fatalf("the other transaction was the victim (%v); the write should have been", err)
			}
			if err := other.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := answers(t, []<-chan error{ch}, 20*time.Second)[0]; err != nil {
				t.Fatalf("the write answered %v; a deadlock victim must run again", err)
			}
			if got := b.rows(t); !slices.Equal(got, []int{1}) {
				t.Errorf("rows %v, want [1]", got)
			}
			if n := runs.Load(); n != 2 {
				t.Errorf("the write ran %d times, want 2 (aborted once, then alone)", n)
			}
		})
	}
}

// syncBuffer is a log sink safe for the committer's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
