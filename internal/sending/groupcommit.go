package sending

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/events"
	"mailroom/internal/groupcommit"
	"mailroom/internal/jobs"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// The send committer's tuning (figures in docs/performance.md, "Group
// commit"). maxBatch is big enough to amortise the fsync, small enough that
// the first send of a batch does not wait long for the last.
const maxBatch = 512

// gatherMin: while the last batch is flushed to disk, a smaller batch waits
// for that flush, since a commit of a handful costs the writer nearly what
// one of dozens does.
const gatherMin = 64

// gatherMore and gatherWait: under a steady stream (a last batch of at least
// gatherMore/2), the next batch waits up to gatherWait to reach gatherMore,
// because fewer, larger commits leave more CPU to the requests; a lone send
// or a light load never waits.
const (
	gatherMore = 32
	gatherWait = 400 * time.Microsecond
)

// pipeMin: on PostgreSQL a second commit starts while one is in flight once
// pipeMin sends wait, so the next batch goes while the server flushes the
// last one's WAL without halving batches.
const pipeMin = 24

// maxBulk bounds the background writes (each may cover many emails) that
// ride along in one group commit.
const maxBulk = 2

// writeOp is one write through the group committer: write, and for the
// batch's hooks a send's suppression check (or nil). A write may run twice
// (once in a shared transaction that is rolled back, then alone), so it must
// only set state it fully overwrites.
type writeOp struct {
	write acceptFunc
	check *supCheck // recipients to look up on the suppression list, or nil
	// batch is the accept batch of the run under way, which wrap makes
	// before the writes run and hands each of them (run).
	batch *acceptBatch
}

// acceptFunc is one write inside a group commit: the emails it accepts join
// a, which the commit writes once all its writes have run.
type acceptFunc func(ctx context.Context, tx *store.Tx, a *acceptBatch) error

// run is the op as groupcommit runs it: write with the run's batch.
func (op *writeOp) run(ctx context.Context, tx *store.Tx) error {
	return op.write(ctx, tx, op.batch)
}

// acceptBatch is what the writes of one run of a batch accept: their
// emails' rows and bodies (insertArgs, row after row) for the accept
// statement, and the emails to hand to delivery. writeAccepted writes it.
type acceptBatch struct {
	emails, bodies []any
	deliver        []jobs.EmailRef
}

// add queues an email's row and bodies (insertArgs) for the accept statement.
func (a *acceptBatch) add(row, body []any) {
	a.emails = append(a.emails, row...)
	a.bodies = append(a.bodies, body...)
}

// supCheck is one send's suppression lookup, answered for the whole batch by
// one query (a read per request cost a round trip each on PostgreSQL): inside
// the committing transaction on SQLite; on PostgreSQL inside the statement
// that writes the batch (groupWriter.guard), or, when that guess failed,
// just before it, where a plain read in READ COMMITTED sees the same rows
// either way (Tx.Read). found is overwritten on every run of the batch.
//
// key, when set, is the id of an API key taken on trust (Caller.ConfirmKey):
// the same query reads it, and keyGone says it has been revoked.
type supCheck struct {
	ws      string
	emails  []string // normalized
	found   map[string]string
	key     string
	keyGone bool
}

// checkSet is what the checks of a batch ask the database: the recipients
// (normalized, each once), the workspaces sending to them, the keys taken on
// trust, and every (workspace, recipient) pair a send checks.
type checkSet struct {
	emails, workspaces, keys []string
	pairWS, pairEmail        []string
}

// gatherChecks collects the checks of ops and clears their answers (a batch
// may run twice).
func gatherChecks(ops []*writeOp) *checkSet {
	cs := &checkSet{pairWS: []string{}, pairEmail: []string{}, keys: []string{}}
	seen, seenWS, seenKey := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, op := range ops {
		c := op.check
		if c == nil {
			continue
		}
		c.found, c.keyGone = nil, false
		if c.key != "" && !seenKey[c.key] {
			seenKey[c.key] = true
			cs.keys = append(cs.keys, c.key)
		}
		if len(c.emails) > 0 && !seenWS[c.ws] {
			seenWS[c.ws] = true
			cs.workspaces = append(cs.workspaces, c.ws)
		}
		for _, e := range c.emails {
			cs.pairWS, cs.pairEmail = append(cs.pairWS, c.ws), append(cs.pairEmail, e)
			if !seen[e] {
				seen[e] = true
				cs.emails = append(cs.emails, e)
			}
		}
	}
	return cs
}

// lookupSuppressions fills every check of ops with one query per chunk. The
// first query also asks which of the sending workspaces have a webhook
// endpoint, for the events the batch raises (events.KnownListeners): on
// PostgreSQL that question was a round trip of its own per batch, a fifth
// of a batch's time under load. It also reads the keys taken on trust.
func lookupSuppressions(ctx context.Context, tx *store.Tx, ops []*writeOp) error {
	cs := gatherChecks(ops)
	all := cs.emails
	if len(all) == 0 && len(cs.keys) == 0 {
		return nil
	}
	listened := map[string]bool{}
	live := map[string]bool{}
	for start := 0; start == 0 || start < len(all); start += 512 {
		q, args := cs.query(all[start:min(start+512, len(all))], start == 0)
		rows, err := tx.Read(ctx, q, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var kind int
			var ws, email, reason string
			if err := rows.Scan(&kind, &ws, &email, &reason); err != nil {
				rows.Close()
				return err
			}
			switch kind {
			case 1:
				listened[ws] = true
				continue
			case 2:
				live[ws] = true // the key's id
				continue
			}
			for _, op := range ops {
				if c := op.check; c != nil && suppressions.Applies(ws, c.ws) && slices.Contains(c.emails, email) {
					if c.found == nil {
						c.found = map[string]string{}
					}
					c.found[email] = reason
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, op := range ops {
		if c := op.check; c != nil && c.key != "" {
			c.keyGone = !live[c.key]
		}
	}
	if len(cs.workspaces) > 0 {
		events.KnownListeners(tx, cs.workspaces, listened)
	}
	return nil
}

// groupWriter is the send path's group committer: concurrent sends share
// one commit, which is what lets SQLite, which flushes every commit to disk
// before answering, accept thousands of sends a second without giving up
// durability. It adds to groupcommit.Committer what is particular to sends:
// one suppression lookup per batch, the PostgreSQL guard that writes
// without reading first (and learns which workspaces have webhook
// endpoints), and the batch's deliveries in one job. A batch that fails is
// run again write by write (groupcommit.RetryAlone).
type groupWriter struct {
	c *groupcommit.Committer[*writeOp]

	lmu       sync.Mutex
	listeners map[string]bool // workspace -> has a webhook endpoint, as the last guarded commit found
}

func newGroupWriter(db *store.DB, log *slog.Logger, committers int, reg prometheus.Registerer) *groupWriter {
	g := &groupWriter{}
	g.c = groupcommit.New(groupcommit.Config[*writeOp]{
		Name: "send", DB: db, Log: log, Isolation: groupcommit.RetryAlone,
		MaxBatch: maxBatch, Committers: committers, MaxBackground: maxBulk,
		FlushGather: gatherMin, Gather: gatherMore, GatherAfter: gatherMore / 2, GatherWait: gatherWait,
		Pipeline: pipeMin,
		Hooks:    groupcommit.Hooks[*writeOp]{Wrap: g.wrap, Ended: g.ended},
		Registry: reg,
	})
	return g
}

func (g *groupWriter) start(ctx context.Context) error { return g.c.Start(ctx) }

// shutdown lets queued writes finish, then stops the committer.
func (g *groupWriter) shutdown() { g.c.Stop() }

// submit queues an accept and returns the channel its result arrives on.
func (g *groupWriter) submit(fn acceptFunc, check *supCheck) <-chan error {
	op := &writeOp{write: fn, check: check}
	return g.c.Submit(op, op.run)
}

// do runs background work fn in a shared transaction and waits for its
// commit. Accepts go first: a batch takes at most maxBulk background writes,
// so a burst of sends is answered promptly while the simulator and the
// scheduler keep moving behind it.
func (g *groupWriter) do(ctx context.Context, fn acceptFunc) error {
	op := &writeOp{write: fn}
	return g.c.Do(ctx, op, op.run)
}

// wrap runs a batch's writes: on its first run guarded where it can (see
// guard), else reading the checks first (lookupSuppressions). The writes
// gather their emails in one acceptBatch, which writeAccepted then writes.
func (g *groupWriter) wrap(ctx context.Context, tx *store.Tx, b *groupcommit.Batch[*writeOp], run func(context.Context) error) error {
	a := &acceptBatch{}
	for _, op := range b.Items {
		op.batch = a
	}
	if seen := g.guard(tx, b); seen != nil {
		b.Note = seen
	} else if err := lookupSuppressions(ctx, tx, b.Items); err != nil {
		return err
	}
	if err := run(ctx); err != nil {
		return err
	}
	writeAccepted(tx, a)
	return nil
}

// ended learns from a guarded run and asks for a second run, reading
// first, when the guard vetoed the first: its checks found what it bet
// against (a suppressed recipient, a revoked key, a new webhook endpoint)
// and nothing was written.
func (g *groupWriter) ended(b *groupcommit.Batch[*writeOp], err error) bool {
	vetoed := errors.Is(err, store.ErrVetoed)
	if seen, ok := b.Note.(*guardSeen); ok && b.Attempt == 0 && (err == nil || vetoed) {
		g.learn(seen)
	}
	return vetoed
}

// guardSeen is what a guarded commit's read found: the sending workspaces
// and which of them have a webhook endpoint.
type guardSeen struct {
	workspaces []string
	listened   map[string]bool
}

// maxGuarded bounds the recipients of a guarded commit (one IN list);
// a batch with more reads first.
const maxGuarded = 512

// guard prepares a group commit on PostgreSQL to write without reading
// first (store.Guard): every check is answered as the common case has it
// (no recipient suppressed, every key live, webhook endpoints where the
// last commit found them), and the statement that writes the rows reads
// the same things as lookupSuppressions and keeps the rows out if any
// answer was wrong. That is one round trip per batch instead of two, a
// fifth more sends a second. It answers nil where a guard does not apply
// (a second run, SQLite, nothing to check, a very large batch).
func (g *groupWriter) guard(tx *store.Tx, b *groupcommit.Batch[*writeOp]) *guardSeen {
	if b.Attempt > 0 || !tx.CanGuard() {
		return nil
	}
	cs := gatherChecks(b.Items)
	if (len(cs.emails) == 0 && len(cs.keys) == 0) || len(cs.emails) > maxGuarded {
		return nil
	}
	gs := &guardSeen{workspaces: cs.workspaces, listened: map[string]bool{}}
	assumed := []string{}
	known := map[string]bool{}
	g.lmu.Lock()
	for _, ws := range gs.workspaces {
		if g.listeners[ws] {
			assumed = append(assumed, ws)
			known[ws] = true
		}
	}
	g.lmu.Unlock()
	if len(gs.workspaces) > 0 {
		events.KnownListeners(tx, gs.workspaces, known)
	}
	q, args := cs.query(cs.emails, true)
	tx.SetGuard(&store.Guard{
		Query:    q,
		Args:     args,
		Veto:     acceptVeto, // beside the accept statement, in store.go
		VetoArgs: []any{cs.pairWS, cs.pairEmail, cs.keys, assumed},
		Row: func(kind int, a, _, _ string) {
			if kind == 1 {
				gs.listened[a] = true
			}
		},
	})
	return gs
}

// learn remembers which workspaces a guarded commit found with webhook
// endpoints, for the next guess.
func (g *groupWriter) learn(gs *guardSeen) {
	g.lmu.Lock()
	defer g.lmu.Unlock()
	if g.listeners == nil || len(g.listeners) > 10000 {
		g.listeners = map[string]bool{}
	}
	for _, ws := range gs.workspaces {
		g.listeners[ws] = gs.listened[ws]
	}
}
