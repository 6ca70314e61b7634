// Package groupcommit commits many small, concurrent writes in shared
// transactions, so that they share one commit (one fsync on SQLite, one
// round trip and WAL flush on PostgreSQL). Every writer of the node that
// commits often and small goes through a Committer: accepted sends, the
// delivery engine's claims and outcomes, the webhook pool's outcomes.
//
// A Committer runs from Start to Stop. Writes queued before Start or after
// Stop (a job running while the node boots or drains) commit alone in the
// caller instead, so a write is never lost for want of a committer.
//
// Three isolation strategies keep one bad write from failing its neighbours
// (see Isolation): RetryAlone runs the batch plainly and, when it fails,
// runs each write again in a transaction of its own; Savepoint wraps each
// write in a SAVEPOINT and rolls back only the one that failed; Optimistic
// runs the batch plainly and, when a write fails, runs it again without
// that write.
//
// The techniques the send path measured are options of the one committer:
// on SQLite a commit's answers wait for its WAL flush while the next batch
// is built (store.Tx.CommitLater), and a small batch waits for that flush
// (Config.FlushGather) or, under load, a little longer for company
// (Config.Gather); on PostgreSQL a second commit may be in flight while the
// first one's WAL is flushed (Config.Pipeline). Figures behind each default
// are in docs/performance.md, "Group commit".
package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/store"
)

// Isolation is how a batch keeps one failing write from failing the rest.
type Isolation int

const (
	// RetryAlone runs a batch's writes one after another in one
	// transaction. If any fails, or the commit does, the transaction rolls
	// back and each write runs again alone, in its own transaction, so
	// that the bad one fails alone. A write may thus run twice and must set
	// only state it fully overwrites. It costs nothing per write: use it
	// where writes rarely fail (sends, webhook outcomes).
	RetryAlone Isolation = iota
	// Savepoint runs each write of a batch inside its own SAVEPOINT: a
	// write that fails is rolled back alone, with the inserts, jobs and
	// after-commit functions it deferred (store.Tx.Rewind), and the others
	// commit. A write runs once unless the commit itself fails (then each
	// runs again alone). It costs two statements per write: use it where a
	// write may fail as a matter of course (a delivery outcome for an
	// email cancelled meanwhile).
	Savepoint
	// Optimistic runs a batch's writes plainly, as RetryAlone; a write that
	// fails is answered as under Savepoint (its error, nothing of it kept),
	// but by rolling the whole transaction back and running the batch
	// again without it. The writes before it thus run twice and must set
	// only state they fully overwrite. After optimisticRuns failed runs
	// the batch falls back to savepoints. It costs nothing per write while
	// writes succeed: use it where a write fails as a matter of course, but
	// rarely (delivery's claims and outcomes).
	Optimistic
)

// Func is one write. It must touch the database only through tx.
type Func func(ctx context.Context, tx *store.Tx) error

// Batch is what the hooks see of one run of a batch.
type Batch[T any] struct {
	Items   []T // the writes' values, in order
	Attempt int // 0, then 1 when Hooks.Ended asked for a second run
	Note    any // the hooks' own state, kept across the batch's runs
}

// Hooks let a user do per-batch work around its writes: one query for the
// whole batch instead of one per write, say.
type Hooks[T any] struct {
	// Wrap, when set, runs inside each transaction of the batch (and of
	// each write run alone): it must call run, which runs the writes with
	// the context it is given, and may do work before and after.
	Wrap func(ctx context.Context, tx *store.Tx, b *Batch[T], run func(context.Context) error) error
	// Ended, when set, is told how each run of a batch ended (err is nil
	// when it committed) and answers whether to run the whole batch once
	// more before falling back to one write at a time.
	Ended func(b *Batch[T], err error) (again bool)
}

// Config builds a Committer. Zero values of the tuning fields turn their
// technique off.
type Config[T any] struct {
	// Name labels the metrics (committer="<Name>").
	Name string
	DB   *store.DB
	// Log receives the fallback to single writes and the errors of writes
	// nobody waits for (Go); nil discards.
	Log       *slog.Logger
	Isolation Isolation
	// MaxBatch bounds the writes of one commit; 0 means 512.
	MaxBatch int
	// Committers is the number of committing goroutines; 0 means 1.
	Committers int
	// MaxBackground bounds the background writes (Do's lane) that ride in
	// one batch, so that queued foreground writes go first; 0 means 2.
	MaxBackground int
	// FlushGather: while the last commit's answers wait for the disk
	// (SQLite), a batch of fewer writes waits for that flush, gathering
	// meanwhile. 0 never waits.
	FlushGather int
	// Gather, GatherAfter and GatherWait: when the last batch had at least
	// GatherAfter writes (and, on SQLite, a flush to wait for; GatherAfter
	// 0 means always), the next batch waits up to GatherWait to reach
	// Gather writes. GatherWait 0 never waits.
	Gather      int
	GatherAfter int
	GatherWait  time.Duration
	// Pipeline, on PostgreSQL with one committer: while one commit is in
	// flight, a second starts (on another connection) once Pipeline writes
	// are waiting, never more than two. 0 keeps one commit in flight.
	// Batches may then commit in either order: use it only for writes
	// that do not depend on each other's order.
	Pipeline int
	Hooks    Hooks[T]
	// Registry receives the metrics; nil keeps none.
	Registry prometheus.Registerer
}

// write is one queued write. done is nil for a write nobody waits for.
type write[T any] struct {
	item T
	fn   Func
	done chan error
}

// Committer commits writes in shared transactions from Start to Stop.
type Committer[T any] struct {
	cfg     Config[T]
	log     *slog.Logger
	ops     chan *write[T] // foreground writes (Submit, Go)
	bulk    chan *write[T] // background writes (Do), MaxBackground per batch
	metrics metrics

	mu   sync.RWMutex
	ctx  context.Context // set by Start
	done bool            // set by Stop
	stop chan struct{}
	wg   sync.WaitGroup
}

// New builds a committer; nothing runs until Start.
func New[T any](cfg Config[T]) *Committer[T] {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 512
	}
	if cfg.Committers <= 0 {
		cfg.Committers = 1
	}
	if cfg.MaxBackground <= 0 {
		cfg.MaxBackground = 2
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Committer[T]{
		cfg: cfg, log: log,
		ops:     make(chan *write[T], 4*cfg.MaxBatch),
		bulk:    make(chan *write[T], cfg.MaxBatch),
		stop:    make(chan struct{}),
		metrics: newMetrics(cfg.Name, cfg.MaxBatch, cfg.Registry),
	}
}

// ErrStopped is Start's answer once the committer has been stopped: it
// cannot run again (build a new one).
var ErrStopped = errors.New("groupcommit: started after Stop")

// Start runs the committing goroutines until Stop. Their commits outlive
// ctx's cancellation: writes already queued belong to requests that were
// accepted. A second Start does nothing.
func (c *Committer[T]) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return ErrStopped
	}
	if c.ctx != nil {
		return nil
	}
	c.ctx = context.WithoutCancel(ctx)
	if c.cfg.Pipeline > 0 && c.cfg.Committers == 1 && c.cfg.DB.ConcurrentCommits() {
		c.wg.Add(1)
		go c.loopPipelined()
		return nil
	}
	for range c.cfg.Committers {
		c.wg.Add(1)
		go c.loop()
	}
	return nil
}

// Stop commits what is queued, waits for every answer, and stops the
// committing goroutines. Writes queued later commit alone. A second call
// does nothing.
func (c *Committer[T]) Stop() {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return
	}
	c.done = true
	close(c.stop)
	c.mu.Unlock()
	c.wg.Wait()
}

// Submit queues fn (carrying item for the hooks) and returns the channel
// its result arrives on, once its commit is on disk.
func (c *Committer[T]) Submit(item T, fn Func) <-chan error {
	w := &write[T]{item: item, fn: fn, done: make(chan error, 1)}
	c.enqueue(c.ops, w)
	return w.done
}

// Go queues fn for a caller that does not wait: a failure is logged.
func (c *Committer[T]) Go(item T, fn Func) {
	c.enqueue(c.ops, &write[T]{item: item, fn: fn})
}

// Do runs fn as background work (at most MaxBackground per batch, behind
// the foreground writes) and waits for its commit. If ctx ends first, Do
// returns its error; the write is queued and may still commit.
func (c *Committer[T]) Do(ctx context.Context, item T, fn Func) error {
	w := &write[T]{item: item, fn: fn, done: make(chan error, 1)}
	c.enqueue(c.bulk, w)
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue hands w to the committer, or commits it alone when none runs.
func (c *Committer[T]) enqueue(ch chan *write[T], w *write[T]) {
	c.mu.RLock()
	if !c.done && c.ctx != nil {
		ch <- w
		c.mu.RUnlock()
		return
	}
	c.mu.RUnlock()
	c.answer(w, c.alone(context.Background(), w))
}

// answer delivers a write's result to its caller, or logs a failure
// nobody waits for.
func (c *Committer[T]) answer(w *write[T], err error) {
	if w.done != nil {
		w.done <- err
		return
	}
	if err != nil {
		c.log.Error("groupcommit: a write failed", "committer", c.cfg.Name, "err", err)
	}
}

// call runs one write, turning a panic into its error so that one bad
// write cannot take the committer down.
func call(ctx context.Context, tx *store.Tx, fn Func) (err error) {
	if fn == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("groupcommit: write panicked: %v", p)
		}
	}()
	return fn(ctx, tx)
}
