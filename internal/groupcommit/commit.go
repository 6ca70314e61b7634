package groupcommit

import (
	"context"
	"errors"
	"slices"
	"time"

	"mailroom/internal/store"
)

// commit runs batch in one transaction and answers its writes. When the
// commit still has to reach the disk (SQLite) it returns a channel closed
// once it has: the answers go out then, and the next batch is built
// meanwhile. If the batch fails as a whole, each write runs again alone.
func (c *Committer[T]) commit(batch []*write[T]) (flushed chan struct{}) {
	start := time.Now()
	c.metrics.writes.Observe(float64(len(batch)))
	defer func() { c.metrics.seconds.Observe(time.Since(start).Seconds()) }()
	// The writes belong to callers already queued; one that goes away must
	// not abort its neighbours.
	ctx := c.ctx
	errs := make([]error, len(batch))
	wait, err := c.run(ctx, batch, errs)
	if err == nil && wait == nil { // durable already (PostgreSQL)
		for i, w := range batch {
			c.answer(w, c.settle(ctx, w, errs[i]))
		}
		return nil
	}
	if err == nil {
		ws := slices.Clone(batch) // the loop reuses batch
		flushed = make(chan struct{})
		c.wg.Add(1) // Stop waits for the answers too
		committed := time.Now()
		go func() {
			defer c.wg.Done()
			err := wait()
			c.metrics.flush.Observe(time.Since(committed).Seconds())
			close(flushed)
			for i, w := range ws {
				if err != nil {
					c.answer(w, err)
				} else {
					c.answer(w, c.settle(ctx, w, errs[i]))
				}
			}
		}()
		c.cfg.DB.FinishWAL(ctx) // it may copy a few hundred pages
		return flushed
	}
	if len(batch) == 1 {
		c.answer(batch[0], c.settle(ctx, batch[0], err))
		return nil
	}
	c.metrics.fallbacks.Inc()
	c.log.Warn("group commit failed; retrying its writes one by one", "committer", c.cfg.Name, "writes", len(batch), "err", err)
	for _, w := range batch {
		c.answer(w, c.alone(ctx, w))
	}
	return nil
}

// settle is a write's answer once its batch committed: a write rolled back
// to its savepoint as a deadlock victim runs again alone, since its caller
// may already have done what the write records (a message handed to a mail
// server) and would otherwise do it twice.
func (c *Committer[T]) settle(ctx context.Context, w *write[T], err error) error {
	if !store.IsDeadlock(err) {
		return err
	}
	c.metrics.deadlocks.Inc()
	time.Sleep(5 * time.Millisecond) // let the other side take its locks first
	return c.alone(ctx, w)
}

// deadlockTries bounds how often a write that keeps losing deadlocks runs
// alone before its caller is told.
const deadlockTries = 6

// alone commits one write in its own transaction and waits for the disk,
// running it again while PostgreSQL picks it as a deadlock victim.
func (c *Committer[T]) alone(ctx context.Context, w *write[T]) error {
	var err error
	for try := range deadlockTries {
		if try > 0 {
			c.metrics.deadlocks.Inc()
			time.Sleep(time.Duration(try*try) * 5 * time.Millisecond) // let the other side finish
		}
		errs := make([]error, 1)
		var wait func() error
		wait, err = c.run(ctx, []*write[T]{w}, errs)
		if err == nil && wait != nil {
			err = wait()
		}
		if err == nil {
			err = errs[0]
		}
		if !store.IsDeadlock(err) {
			return err
		}
	}
	return err
}

// run commits the writes in one transaction (twice when Hooks.Ended asks)
// and returns CommitLater's wait. errs receives each write's own failure
// where the strategy lets the others commit (Savepoint, Optimistic).
func (c *Committer[T]) run(ctx context.Context, ws []*write[T], errs []error) (wait func() error, err error) {
	b := &Batch[T]{Items: make([]T, len(ws))}
	for i, w := range ws {
		b.Items[i] = w.item
	}
	iso, reruns := c.cfg.Isolation, 0
	for {
		if reruns == 0 {
			clear(errs)
		}
		wait, err = c.cfg.DB.InTxLater(ctx, func(tx *store.Tx) error {
			if c.cfg.Hooks.Wrap != nil {
				return c.cfg.Hooks.Wrap(ctx, tx, b, func(ctx context.Context) error { return c.writes(ctx, tx, ws, errs, iso) })
			}
			return c.writes(ctx, tx, ws, errs, iso)
		})
		if errors.Is(err, errRunAgain) {
			// A write failed (Optimistic): the batch runs again without it.
			c.metrics.reruns.Inc()
			if reruns++; reruns >= optimisticRuns {
				iso = Savepoint
			}
			continue
		}
		if c.cfg.Hooks.Ended == nil || !c.cfg.Hooks.Ended(b, err) || b.Attempt > 0 {
			return wait, err
		}
		b.Attempt++
		iso, reruns = c.cfg.Isolation, 0
	}
}

// optimisticRuns bounds how often an Optimistic batch runs again without
// its failed writes before it falls back to savepoints: a batch where many
// writes fail must not run once per failure.
const optimisticRuns = 3

// errRunAgain ends an Optimistic run whose write failed (its error is in
// errs): the transaction rolls back and the batch runs again without it.
var errRunAgain = errors.New("groupcommit: a write failed; running the batch again without it")

// writes runs the writes in tx under isolation iso, skipping those that
// already failed in an earlier run of the batch (errs). An error it returns
// fails the whole transaction.
func (c *Committer[T]) writes(ctx context.Context, tx *store.Tx, ws []*write[T], errs []error, iso Isolation) error {
	if len(ws) == 1 {
		iso = RetryAlone // alone, its failure is the transaction's
	}
	switch iso {
	case Savepoint:
		for i, w := range ws {
			if errs[i] != nil {
				continue
			}
			mark := tx.Mark()
			if _, err := tx.Exec(ctx, "SAVEPOINT w"); err != nil {
				return err
			}
			if errs[i] = call(ctx, tx, w.fn); errs[i] != nil {
				if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT w"); err != nil {
					return err
				}
				tx.Rewind(mark)
			}
			if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT w"); err != nil {
				return err
			}
		}
	case Optimistic:
		for i, w := range ws {
			if errs[i] != nil {
				continue
			}
			if errs[i] = call(ctx, tx, w.fn); errs[i] != nil {
				return errRunAgain
			}
		}
	default:
		for _, w := range ws {
			if err := call(ctx, tx, w.fn); err != nil {
				return err
			}
		}
	}
	return nil
}
