package delivery

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/groupcommit"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// flushGather: on SQLite, while the last commit is flushed, a smaller batch
// waits for that flush, as the send path does (see groupcommit.Config).
const flushGather = 64

// gatherMore, gatherAfter, gatherWait: under load (the last batch had a
// flush to wait for and gatherAfter writes or more) a batch waits up to
// gatherWait to reach gatherMore writes: fewer, larger commits, each with
// its BEGIN, COMMIT and fsync, leave CPU to the deliveries.
const (
	gatherMore  = 64
	gatherAfter = 8
	gatherWait  = 2 * time.Millisecond
)

// groupCommit runs the small writes of many concurrent jobs (claims,
// outcomes) in shared transactions: SQLite has one writer and every commit
// pays an fsync, so a hundred outcomes per commit is what lets delivery keep
// up with the SMTP side. A write may fail as a matter of course (an email
// cancelled meanwhile, errGone) and must then roll back alone, but rarely
// does: the batch runs without savepoints and, when a write fails, runs
// again without it (groupcommit.Optimistic). SAVEPOINT and RELEASE were
// four of the 8.4 statements a delivered email cost. Every write here may thus
// run more than once, and sets only state it fully overwrites.
type groupCommit struct {
	c *groupcommit.Committer[*lookup]
}

func newGroupCommit(db *store.DB, log *slog.Logger, reg prometheus.Registerer) *groupCommit {
	return &groupCommit{c: groupcommit.New(groupcommit.Config[*lookup]{
		Name: "delivery", DB: db, Log: log, Isolation: groupcommit.Optimistic,
		MaxBatch: maxBatch, FlushGather: flushGather, Registry: reg,
		Gather: gatherMore, GatherAfter: gatherAfter, GatherWait: gatherWait,
		Hooks: groupcommit.Hooks[*lookup]{Wrap: readSuppressions},
	})}
}

// Do runs fn in a write transaction, perhaps shared with other writes, and
// returns once that transaction has committed (or fn failed). fn may run
// more than once (the batch ran again without another write that failed, or
// the shared commit failed and each write runs alone), and must touch the
// database only through tx and leave its other effects to tx.AfterCommit.
func (g *groupCommit) Do(ctx context.Context, fn func(*store.Tx) error) error {
	return g.DoReading(ctx, nil, fn)
}

// DoReading is Do for a write that reads the suppressions of l's addresses:
// they are read for the whole batch in one query per workspace
// (readSuppressions), into l.found, before fn runs.
func (g *groupCommit) DoReading(_ context.Context, l *lookup, fn func(*store.Tx) error) error {
	// The write is queued and will run; waiting for its outcome whatever
	// the caller's context keeps "returned" meaning "committed or failed".
	return <-g.c.Submit(l, func(_ context.Context, tx *store.Tx) error { return fn(tx) })
}

// lookup is a claim's suppression read (see sendable): the addresses owed
// an attempt, and what the batch's read found of them.
type lookup struct {
	workspaceID string
	addrs       []string
	// found is set in each transaction of the batch, before its writes
	// run: suppressed address (normalized) -> reason, for the workspace.
	found map[string]string
}

// lookupChunk bounds the addresses of one suppressions query.
const lookupChunk = 512

// padded is addrs padded to the next power of two by repeating the last,
// which changes nothing in an IN list: the batch's query then takes one of
// a few forms, each prepared once, instead of one per length.
func padded(addrs []string) []string {
	n := 1
	for n < len(addrs) {
		n *= 2
	}
	addrs = slices.Clip(addrs) // the next chunk follows in the array
	for len(addrs) < n {
		addrs = append(addrs, addrs[len(addrs)-1])
	}
	return addrs
}

// readSuppressions reads, inside each transaction of a batch and before its
// writes, the suppressions of every claim's addresses: one query per
// workspace instead of one per claim, which was a tenth of the committer's
// statements. The claims thus see the suppressions as they were when their
// batch began, as if they had been queued before its other writes.
func readSuppressions(ctx context.Context, tx *store.Tx, b *groupcommit.Batch[*lookup], run func(context.Context) error) error {
	var byWS map[string][]string
	for _, l := range b.Items {
		if l != nil {
			if byWS == nil {
				byWS = map[string][]string{}
			}
			byWS[l.workspaceID] = append(byWS[l.workspaceID], l.addrs...)
		}
	}
	found := make(map[string]map[string]string, len(byWS))
	for ws, addrs := range byWS {
		m := map[string]string{}
		for len(addrs) > 0 {
			n := min(len(addrs), lookupChunk)
			sup, err := suppressions.Suppressed(ctx, tx, ws, padded(addrs[:n]))
			if err != nil {
				return err
			}
			maps.Copy(m, sup)
			addrs = addrs[n:]
		}
		found[ws] = m
	}
	for _, l := range b.Items {
		if l != nil {
			l.found = found[l.workspaceID]
		}
	}
	return run(ctx)
}
