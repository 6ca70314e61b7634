package sending

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/events"
	"mailroom/internal/jobs"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
	"mailroom/internal/webhooks"
	"mailroom/internal/workspaces"
)

// maxBatch bounds one group commit: big enough to amortise the fsync, small
// enough that the first request of a batch does not wait long for the last.
const maxBatch = 512

// gatherMin is the batch size from which the committer commits while the
// last batch is still being flushed to disk; a smaller batch waits for that
// flush, gathering meanwhile. Committing a handful of sends costs the writer
// nearly what committing dozens does (the same right-edge pages rewritten,
// one BEGIN and COMMIT): without the wait batches fell from 16 to 4 sends and
// throughput by a fifth; with 16 it was no better than committing serially;
// with 64 it won four interleaved bench pairs of four (+7% to +31%).
const gatherMin = 64

// gatherMore and gatherWait shape SQLite's batches under load: when the
// last batch was at least half of gatherMore (a steady stream of concurrent
// sends) and its flush has ended, the committer waits up to gatherWait more
// for the next batch to reach gatherMore before committing it. Each commit
// costs the writer nearly the same whatever its size (the same right-edge
// pages, one fsync, which keeps one of the Go scheduler's processors for its
// 0.6 ms), so under load fewer, larger commits leave more CPU to the
// requests: at 64 connections batches grew from 19 to 26 sends, CPU per send
// fell by 7 µs and sends/s rose 5-10% (bench/send, interleaved pairs). A
// lone send or a light load (a last batch under gatherMore/2) never waits:
// at 8, 16 and 24 connections nothing changed or it improved.
const (
	gatherMore = 32
	gatherWait = 400 * time.Microsecond
)

// pipeMin shapes PostgreSQL's commits: while one commit is in flight, a
// second starts (on another connection) once pipeMin writes are waiting, and
// never more than two are in flight. One commit at a time left a fifth of
// the CPU idle under load: a batch waited for the last one's round trip,
// and while the server flushed its WAL every request of the bench sat in
// the committing batch or the next one. Starting the second at once (two
// plain committers) halved batches, and the server's CPU per send rose as
// much as the wait fell; at 24 batches stay near their old size and the
// next one goes while the server still flushes the last. bench/send at 64
// connections, PostgreSQL, three runs of each value, interleaved: one in
// flight 9.2-9.5k sends/s, ratio to the ceiling 0.36-0.38, p99 15-16 ms; at
// 24 10.7-10.9k, 0.40-0.42, 13-14 ms; 8, 16, 20 and 32 gave less, 28 as much.
const pipeMin = 24

// maxBulk bounds the background writes (each may cover many emails) that
// ride along in one group commit.
const maxBulk = 2

// writeOp is one unit of work for the group committer. fn may run twice
// (once in a shared transaction that is rolled back, then alone), so it must
// only set state it fully overwrites.
type writeOp struct {
	fn    writeFunc
	done  chan error
	check *supCheck // recipients to look up on the suppression list, or nil
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

// query is the read for emails (cs.emails or a chunk of them), as rows of
// (kind, workspace or key id, email, reason): 0 a suppression, 1 a
// workspace with a webhook endpoint, 2 a live key. The endpoints and keys
// are asked in the first chunk only. Each area writes its own part.
func (cs *checkSet) query(emails []string, first bool) (string, []any) {
	var args []any
	var parts []string
	var q string
	if len(emails) > 0 {
		q, args = suppressions.ListedQuery(0, args, emails)
		parts = append(parts, q)
	}
	if first && len(cs.workspaces) > 0 {
		q, args = webhooks.ListenersQuery(1, args, cs.workspaces)
		parts = append(parts, q)
	}
	if first && len(cs.keys) > 0 {
		q, args = workspaces.LiveKeysQuery(2, args, cs.keys)
		parts = append(parts, q)
	}
	return strings.Join(parts, ` UNION ALL `), args
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

// writeFunc is one write inside a group commit.
type writeFunc func(ctx context.Context, tx *store.Tx) error

// runOps executes ops in tx, reading their checks first.
func runOps(ctx context.Context, tx *store.Tx, ops []*writeOp) error {
	if err := lookupSuppressions(ctx, tx, ops); err != nil {
		return err
	}
	return runFns(ctx, tx, ops)
}

// runFns executes ops in tx, their checks already answered.
func runFns(ctx context.Context, tx *store.Tx, ops []*writeOp) error {
	deliver := &deliveries{}
	ctx = context.WithValue(ctx, deliveriesKey{}, deliver)
	for _, op := range ops {
		if err := op.fn(ctx, tx); err != nil {
			return err
		}
	}
	for start := 0; start < len(deliver.refs); start += jobs.MaxDeliverBatch {
		tx.AddJob(jobs.DeliverBatchArgs{Emails: deliver.refs[start:min(start+jobs.MaxDeliverBatch, len(deliver.refs))]})
	}
	return nil
}

// deliveries gathers the emails one group commit hands to the delivery
// engine, so that they travel in one batch job (see jobs.DeliverBatchArgs).
type deliveries struct{ refs []jobs.EmailRef }

type deliveriesKey struct{}

// groupWriter commits many small writes in one transaction, so that
// concurrent sends share one fsync. This is what lets SQLite, which must
// flush every commit to disk before answering, accept thousands of sends a
// second without giving up durability: an answer is written only after the
// commit that holds its row is on disk. One committer by default on both
// databases (see Config.Committers); on PostgreSQL it keeps up to two
// commits in flight (loopPipelined).
type groupWriter struct {
	db   *store.DB
	log  *slog.Logger
	ops  chan *writeOp // sends being accepted: a caller waits on each
	bulk chan *writeOp // background work (simulator, promotion): may wait
	n    int
	wg   sync.WaitGroup
	mu   sync.RWMutex
	stop chan struct{}
	done bool
	ctx  context.Context

	wait time.Duration // gatherWait; tests lengthen it

	lmu       sync.Mutex
	listeners map[string]bool // workspace -> has a webhook endpoint, as the last guarded commit found

	metrics commitMetrics
}

// commitMetrics is what the group committer reports at /metrics: how many
// writes share a commit, how long the committer spends on one, and how long
// its answers then wait for the disk. Their sums over time say whether the
// one committer is the limit (seconds per second near 1) and how much of
// its cycle is the flush.
type commitMetrics struct {
	writes  prometheus.Histogram // writes per commit
	seconds prometheus.Histogram // one commit: its statements and COMMIT (and SQLite's FinishWAL)
	flush   prometheus.Histogram // after COMMIT until on disk (SQLite's WAL flush; PostgreSQL's COMMIT is durable)
}

func newCommitMetrics(reg prometheus.Registerer) commitMetrics {
	m := commitMetrics{
		writes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mailroom_group_commit_writes", Help: "Writes (accepted sends and background writes) sharing one group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10), // 1 to 512, maxBatch
		}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mailroom_group_commit_seconds", Help: "Time the group committer spends on one commit: its statements and COMMIT (on SQLite also the WAL copy that follows a background checkpoint).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14), // 100 µs to 0.8 s
		}),
		flush: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mailroom_group_commit_flush_seconds", Help: "Time a group commit's answers wait after COMMIT for its data to reach the disk (SQLite's WAL flush).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.writes, m.seconds, m.flush)
	}
	return m
}

func newGroupWriter(db *store.DB, log *slog.Logger, committers int, reg prometheus.Registerer) *groupWriter {
	if committers <= 0 {
		committers = 1
	}
	return &groupWriter{db: db, log: log, ops: make(chan *writeOp, 4*maxBatch), bulk: make(chan *writeOp, maxBatch), n: committers, stop: make(chan struct{}), wait: gatherWait, metrics: newCommitMetrics(reg)}
}

func (g *groupWriter) start(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx != nil || g.done {
		return
	}
	g.ctx = ctx
	if g.db.Dialect == store.Postgres && g.n == 1 {
		g.wg.Add(1)
		go g.loopPipelined()
		return
	}
	for range g.n {
		g.wg.Add(1)
		go g.loop()
	}
}

// shutdown lets queued writes finish, then stops the committers.
func (g *groupWriter) shutdown() {
	g.mu.Lock()
	if g.done {
		g.mu.Unlock()
		return
	}
	g.done = true
	close(g.stop)
	g.mu.Unlock()
	g.wg.Wait()
}

// submit queues an accept and returns the channel its result arrives on.
// Before Start and after Stop (a job running while the node boots or
// drains) the write commits on its own instead.
func (g *groupWriter) submit(fn writeFunc, check *supCheck) chan error {
	return g.submitTo(g.ops, fn, check)
}

func (g *groupWriter) submitTo(ch chan *writeOp, fn writeFunc, check *supCheck) chan error {
	op := &writeOp{fn: fn, done: make(chan error, 1), check: check}
	g.mu.RLock()
	if !g.done && g.ctx != nil {
		ch <- op
		g.mu.RUnlock()
		return op.done
	}
	g.mu.RUnlock()
	ctx := context.Background()
	op.done <- g.db.InTx(ctx, func(tx *store.Tx) error { return runOps(ctx, tx, []*writeOp{op}) })
	return op.done
}

// do runs background work fn in a shared transaction and waits for its
// commit. Accepts go first: a batch takes at most maxBulk background writes,
// so a burst of sends is answered promptly while the simulator and the
// scheduler keep moving behind it.
func (g *groupWriter) do(ctx context.Context, fn writeFunc) error {
	ch := g.submitTo(g.bulk, fn, nil)
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *groupWriter) loop() {
	defer g.wg.Done()
	batch := make([]*writeOp, 0, maxBatch)
	var flushing chan struct{} // closed when the last batch is on disk
	last := 0                  // writes in the last batch, when it had a flush to wait for
	more := time.NewTimer(time.Hour)
	more.Stop()
	for {
		batch = batch[:0]
		select {
		case op := <-g.ops:
			batch = append(batch, op)
		case op := <-g.bulk:
			batch = append(batch, op)
		case <-g.stop:
			g.drain()
			return
		}
		// While the last batch is being flushed, a small batch waits for
		// the flush to end (see gatherMin). The committer then wakes on a
		// channel, at once, where a writer returning from its own fsync
		// waited for the Go scheduler to give it a processor again: that
		// wait, not the disk, was most of a commit's time under load.
	gather:
		for flushing != nil && len(batch) < gatherMin {
			select {
			case <-flushing:
				flushing = nil
			case op := <-g.ops:
				batch = append(batch, op)
			case <-g.stop:
				break gather
			}
		}
		// Under load, a little longer (see gatherMore).
		if last >= gatherMore/2 && len(batch) < gatherMore {
			more.Reset(g.wait)
		wait:
			for len(batch) < gatherMore {
				select {
				case op := <-g.ops:
					batch = append(batch, op)
				case <-more.C:
					break wait
				case <-g.stop:
					break wait
				}
			}
			more.Stop()
		}
		batch = g.fill(batch)
	fillBulk:
		for n := 0; n < maxBulk; n++ {
			select {
			case op := <-g.bulk:
				batch = append(batch, op)
			default:
				break fillBulk
			}
		}
		last = 0
		if f := g.commit(batch); f != nil {
			flushing, last = f, len(batch)
		}
	}
}

// loopPipelined is PostgreSQL's committer: it gathers batches and hands
// them to two workers, each committing on its own connection, with a second
// commit in flight only once pipeMin writes are waiting (see pipeMin). A
// lone write while nothing is in flight is committed at once. The writes
// are independent sends, so two batches may commit in either order; what
// one request must see of another's (a send, then its cancel) is already
// committed, since the first request was answered only then.
func (g *groupWriter) loopPipelined() {
	defer g.wg.Done()
	work := make(chan []*writeOp)
	done := make(chan struct{}, 2)
	var workers sync.WaitGroup
	for range 2 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for b := range work {
				g.commit(b)
				done <- struct{}{}
			}
		}()
	}
	defer func() { close(work); workers.Wait() }()
	inflight, bulk := 0, 0
	batch := make([]*writeOp, 0, 2*pipeMin)
	for {
		if len(batch) > 0 && (inflight == 0 || inflight == 1 && len(batch) >= pipeMin) {
			work <- g.fill(batch)
			inflight++
			batch, bulk = make([]*writeOp, 0, 2*pipeMin), 0
			continue
		}
		ops, bulks := g.ops, g.bulk
		if len(batch) >= maxBatch {
			ops = nil
		}
		if bulk >= maxBulk {
			bulks = nil
		}
		select {
		case op := <-ops:
			batch = append(batch, op)
		case op := <-bulks:
			batch = append(batch, op)
			bulk++
		case <-done:
			inflight--
		case <-g.stop:
			// Let the commits in flight end, then commit what is
			// gathered and what is queued.
			for ; inflight > 0; inflight-- {
				<-done
			}
			if len(batch) > 0 {
				g.commit(batch)
			}
			g.drain()
			return
		}
	}
}

// fill adds to batch the sends already queued, up to maxBatch, without
// waiting for more.
func (g *groupWriter) fill(batch []*writeOp) []*writeOp {
	for len(batch) < maxBatch {
		select {
		case op := <-g.ops:
			batch = append(batch, op)
		default:
			return batch
		}
	}
	return batch
}

// drain commits what is still queued when the committer stops, each write
// alone.
func (g *groupWriter) drain() {
	for {
		select {
		case op := <-g.ops:
			g.commit([]*writeOp{op})
		case op := <-g.bulk:
			g.commit([]*writeOp{op})
		default:
			return
		}
	}
}

// commit runs the batch in one transaction; if that fails, each op is
// retried in its own transaction so that one bad write fails alone. When
// the commit still has to reach the disk (SQLite, see store.walSync) it
// returns a channel closed once it has: the answers go out then, and the
// next batch is built meanwhile.
func (g *groupWriter) commit(batch []*writeOp) (flushed chan struct{}) {
	start := time.Now()
	g.metrics.writes.Observe(float64(len(batch)))
	defer func() { g.metrics.seconds.Observe(time.Since(start).Seconds()) }()
	// The writes belong to requests that were already accepted into the
	// queue; a request that goes away must not abort its neighbours.
	ctx := context.WithoutCancel(g.ctx)
	var seen *guardSeen
	wait, err := g.db.InTxLater(ctx, func(tx *store.Tx) error {
		if seen = g.guard(tx, batch); seen != nil {
			return runFns(ctx, tx, batch)
		}
		return runOps(ctx, tx, batch)
	})
	if seen != nil && (err == nil || errors.Is(err, store.ErrVetoed)) {
		g.learn(seen)
	}
	if errors.Is(err, store.ErrVetoed) {
		// The checks found what the guard bet against (a suppressed
		// recipient, a revoked key, a new webhook endpoint): nothing was
		// written. Again, reading first.
		wait, err = g.db.InTxLater(ctx, func(tx *store.Tx) error { return runOps(ctx, tx, batch) })
	}
	if err == nil && wait == nil { // durable already (PostgreSQL)
		for _, op := range batch {
			op.done <- nil
		}
		return nil
	}
	if err == nil {
		ops := slices.Clone(batch) // the loop reuses batch
		flushed = make(chan struct{})
		g.wg.Add(1) // shutdown waits for the answers too
		committed := time.Now()
		go func() {
			defer g.wg.Done()
			err := wait()
			g.metrics.flush.Observe(time.Since(committed).Seconds())
			close(flushed)
			for _, op := range ops {
				op.done <- err
			}
		}()
		g.db.FinishWAL(ctx) // it may copy a few hundred pages
		return flushed
	}
	if len(batch) == 1 {
		batch[0].done <- err
		return nil
	}
	g.log.Warn("group commit failed; retrying its writes one by one", "writes", len(batch), "err", err)
	for _, op := range batch {
		op.done <- g.db.InTx(ctx, func(tx *store.Tx) error { return runOps(ctx, tx, []*writeOp{op}) })
	}
	return nil
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
// (SQLite, nothing to check, a very large batch).
func (g *groupWriter) guard(tx *store.Tx, ops []*writeOp) *guardSeen {
	if !tx.CanGuard() {
		return nil
	}
	cs := gatherChecks(ops)
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
		Query: q,
		Args:  args,
		// A suppression that applies to a send, a key that is gone, or an
		// endpoint the events were not written for.
		Veto: `EXISTS (SELECT 1 FROM g JOIN unnest(?::text[], ?::text[]) AS p(ws, email)
				ON g.kind = 0 AND g.b = p.email AND (g.a = '' OR g.a = p.ws))
			OR EXISTS (SELECT 1 FROM unnest(?::text[]) AS k(id) WHERE NOT EXISTS (SELECT 1 FROM g WHERE g.kind = 2 AND g.a = k.id))
			OR EXISTS (SELECT 1 FROM g WHERE g.kind = 1 AND NOT (g.a = ANY(?::text[])))`,
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
