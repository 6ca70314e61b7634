package delivery

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/groupcommit"
	"mailroom/internal/store"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// flushGather: on SQLite, while the last commit is flushed, a smaller batch
// waits for that flush, as the send path does (see groupcommit.Config).
const flushGather = 64

// groupCommit runs the small writes of many concurrent jobs (claims,
// outcomes) in shared transactions: SQLite has one writer and every commit
// pays an fsync, so a hundred outcomes per commit is what lets delivery keep
// up with the SMTP side. Each write runs inside its own SAVEPOINT
// (groupcommit.Savepoint), since a write fails as a matter of course (an
// email cancelled meanwhile, errGone) and must roll back alone.
type groupCommit struct {
	c *groupcommit.Committer[struct{}]
}

func newGroupCommit(db *store.DB, log *slog.Logger, reg prometheus.Registerer) *groupCommit {
	return &groupCommit{c: groupcommit.New(groupcommit.Config[struct{}]{
		Name: "delivery", DB: db, Log: log, Isolation: groupcommit.Savepoint,
		MaxBatch: maxBatch, FlushGather: flushGather, Registry: reg,
	})}
}

// Do runs fn in a write transaction, perhaps shared with other writes, and
// returns once that transaction has committed (or fn failed). fn runs
// exactly once, unless the shared commit itself fails (then it runs again
// alone), and must touch the database only through tx.
func (g *groupCommit) Do(_ context.Context, fn func(*store.Tx) error) error {
	// The write is queued and will run; waiting for its outcome whatever
	// the caller's context keeps "returned" meaning "committed or failed".
	return <-g.c.Submit(struct{}{}, func(_ context.Context, tx *store.Tx) error { return fn(tx) })
}
