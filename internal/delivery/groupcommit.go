package delivery

import (
	"context"
	"fmt"
	"sync"

	"mailroom/internal/store"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// groupCommit runs the small writes of many concurrent jobs (claims,
// outcomes) in shared transactions: SQLite has one writer and every commit
// pays an fsync, so a hundred outcomes per commit is what lets delivery keep
// up with the SMTP side. Each write runs inside its own SAVEPOINT, so one
// failing write rolls back alone. The first caller to find nobody committing
// becomes the committer and drains the queue; there is no goroutine to stop.
type groupCommit struct {
	db *store.DB

	mu         sync.Mutex
	pending    []*writeReq
	committing bool
}

type writeReq struct {
	fn   func(*store.Tx) error
	done chan error
}

func newGroupCommit(db *store.DB) *groupCommit { return &groupCommit{db: db} }

// Do runs fn in a write transaction, perhaps shared with other writes, and
// returns once that transaction has committed (or fn failed). fn runs
// exactly once and must touch the database only through tx.
func (g *groupCommit) Do(ctx context.Context, fn func(*store.Tx) error) error {
	req := &writeReq{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, req)
	lead := !g.committing
	if lead {
		g.committing = true
	}
	g.mu.Unlock()
	if lead {
		g.drain()
	}
	// The write is already queued and will run; waiting for its outcome
	// keeps "returned" meaning "committed or failed".
	return <-req.done
}

func (g *groupCommit) drain() {
	for {
		g.mu.Lock()
		if len(g.pending) == 0 {
			g.committing = false
			g.mu.Unlock()
			return
		}
		n := min(len(g.pending), maxBatch)
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		g.mu.Unlock()
		g.run(batch)
	}
}

func (g *groupCommit) run(batch []*writeReq) {
	// Writes outlive a cancelled job context: an outcome that reached the
	// remote server must be recorded.
	ctx := context.Background()
	errs := make([]error, len(batch))
	tx, err := g.db.Begin(ctx)
	if err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	single := len(batch) == 1
	for i, r := range batch {
		if single {
			errs[i] = safeCall(r.fn, tx)
			continue
		}
		if _, err := tx.Exec(ctx, "SAVEPOINT w"); err != nil {
			errs[i] = err
			continue
		}
		if errs[i] = safeCall(r.fn, tx); errs[i] != nil {
			if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT w"); err != nil {
				tx.Rollback()
				for _, r := range batch {
					r.done <- fmt.Errorf("delivery: rolling back a failed write: %w", err)
				}
				return
			}
		}
		if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT w"); err != nil && errs[i] == nil {
			errs[i] = err
		}
	}
	if single && errs[0] != nil {
		tx.Rollback()
		batch[0].done <- errs[0]
		return
	}
	if err := tx.Commit(ctx); err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	for i, r := range batch {
		r.done <- errs[i]
	}
}

func safeCall(fn func(*store.Tx) error, tx *store.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("delivery: write panicked: %v", p)
		}
	}()
	return fn(tx)
}
