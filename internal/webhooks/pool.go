package webhooks

import (
	"context"
	"database/sql"
	"log/slog"
	"net/url"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/tracing"
)

// The delivery pool turns due delivery rows into HTTP attempts. One
// scheduler goroutine claims rows in batches (a lease: due_at moves to the
// end of the lease and claim names it), keeps one FIFO per endpoint and
// hands jobs round-robin to the workers, never more than perEndpoint of one
// endpoint at once, so a slow endpoint cannot take every worker. Workers
// hand outcomes to the service's recorder (a group committer, see
// newRecorder), which writes them in batches.

// job is one claimed delivery row, ready to send.
type job struct {
	seq           int64
	claim         string
	webhookID     string
	workspaceID   string
	eventID       string
	eventSeq      sql.NullInt64 // the event's row; null on rows from before migration 00010 found no event
	eventName     string
	attempts      int // made before this one
	nextAttemptAt int64
	leaseUntil    time.Time
	body          []byte
	url           string
	headers       map[string]string
	secrets       []string
	drop          bool          // its event or endpoint is gone
	took          time.Duration // how long the attempt took (wall clock)
	gone          bool          // the endpoint answered 410
}

type outcomeKind int

const (
	outcomeSent    outcomeKind = iota // an attempt was made
	outcomeRelease                    // not attempted: back to the queue as it was
	outcomeDrop                       // nothing left to deliver: delete the row
)

type outcome struct {
	kind     outcomeKind
	job      *job
	attempt  Attempt
	at       time.Time // when the attempt started (clock)
	finished time.Time // when it ended (clock)
}

type pool struct {
	s           *Service
	workers     int
	perEndpoint int // attempts in flight per endpoint
	maxBuffered int // claimed rows on this node

	// latency is each endpoint's recent attempt time (moving average). An
	// endpoint may hold as many claimed rows on this node as it can work
	// through in half a lease, so a slow one keeps few rows leased while
	// a fast one gets whole batches.
	latency map[string]time.Duration

	work   chan *job
	done   chan *job
	claims chan claimed

	queues   map[string][]*job
	inflight map[string]int
	ready    []string
	inReady  map[string]bool
	held     int // claimed jobs not finished (queued + in flight)
}

func newPool(s *Service) *pool {
	n := s.concurrency
	p := &pool{
		s: s, workers: n,
		perEndpoint: max(1, n/2),
		work:        make(chan *job),
		done:        make(chan *job, n),
		claims:      make(chan claimed, 1),
		queues:      map[string][]*job{},
		inflight:    map[string]int{},
		inReady:     map[string]bool{},
	}
	p.maxBuffered = min(max(8*n, 64), maxClaim)
	p.latency = map[string]time.Duration{}
	return p
}

// budget is how many claimed rows endpoint id may hold on this node.
func (p *pool) budget(id string) int {
	lat, ok := p.latency[id]
	if !ok {
		return 2 * p.perEndpoint
	}
	rounds := int((Lease / 2) / max(lat, time.Millisecond))
	return min(max(rounds, 2)*p.perEndpoint, p.maxBuffered)
}

func (p *pool) observe(j *job) {
	if j.took <= 0 {
		return
	}
	if len(p.latency) > 10000 {
		clear(p.latency)
	}
	if old, ok := p.latency[j.webhookID]; ok {
		p.latency[j.webhookID] = (4*old + j.took) / 5
	} else {
		p.latency[j.webhookID] = j.took
	}
}

func (p *pool) run(ctx context.Context) {
	workersDone := make(chan struct{})
	go func() {
		defer close(workersDone)
		p.runWorkers(ctx)
	}()

	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	// dirty: there may be due rows to claim. more: the last claim suggests
	// there are more than it took, so freed capacity should be refilled
	// without waiting for the next poll.
	// excluded: endpoints the last claim left alone because this node held
	// their budget; when one of them frees capacity, claim again. A claim
	// that excludes endpoints may scan their due rows, so while only
	// excluded endpoints have work the poll backs off (quietTicks).
	dirty, claiming, more := true, false, false
	var excluded map[string]bool
	quietTicks := 0
	var next *job
	for {
		if next == nil {
			next = p.pick()
		}
		var work chan *job
		if next != nil {
			work = p.work
		}
		if !claiming && dirty {
			if want := p.maxBuffered - p.held; want >= p.maxBuffered/4 || (p.held == 0 && want > 0) {
				claiming, dirty = true, false
				sat := p.saturated()
				excluded = make(map[string]bool, len(sat))
				for _, id := range sat {
					excluded[id] = true
				}
				go p.claim(ctx, want, sat)
			}
		}
		select {
		case <-ctx.Done():
			if next != nil {
				p.release(next)
			}
			for _, q := range p.queues {
				for _, j := range q {
					p.release(j)
				}
			}
			close(p.work)
			<-workersDone
			if claiming {
				// The claim may have committed; release what it took.
				for _, j := range (<-p.claims).jobs {
					p.release(j)
				}
			}
			// The recorder writes what was handed back; the service
			// stops it once this loop has returned.
			return
		case work <- next:
			next = nil
		case j := <-p.done:
			p.finished(j)
			if more || excluded[j.webhookID] && len(p.queues[j.webhookID])+p.inflight[j.webhookID] < p.budget(j.webhookID) {
				delete(excluded, j.webhookID)
				dirty = true
			}
		case c := <-p.claims:
			claiming = false
			more = c.full
			dirty = dirty || more
			if c.excluded && !c.full {
				quietTicks = 5
			}
			p.add(c.jobs)
			p.s.TestSignals.Claimed.Send(Claimed{Leased: len(c.jobs), Held: p.held})
		case <-p.s.kickPool:
			dirty = true
		case <-tick.C:
			if quietTicks > 0 {
				quietTicks--
			} else {
				dirty = true
			}
		}
	}
}

func (p *pool) release(j *job) { p.report(outcome{kind: outcomeRelease, job: j}) }

// report hands an outcome to the recorder without waiting for its write.
func (p *pool) report(o outcome) { p.s.recorder.Go(o, nil) }

// add queues a claimed batch, giving back at once what exceeds an
// endpoint's budget.
func (p *pool) add(batch []*job) {
	for _, j := range batch {
		if j.drop {
			p.report(outcome{kind: outcomeDrop, job: j})
			continue
		}
		if len(p.queues[j.webhookID])+p.inflight[j.webhookID] >= p.budget(j.webhookID) {
			p.release(j)
			continue
		}
		p.queues[j.webhookID] = append(p.queues[j.webhookID], j)
		p.held++
		p.markReady(j.webhookID)
	}
}

func (p *pool) markReady(id string) {
	if !p.inReady[id] && len(p.queues[id]) > 0 && p.inflight[id] < p.perEndpoint {
		p.inReady[id] = true
		p.ready = append(p.ready, id)
	}
}

// pick takes the next job round-robin over the endpoints that may take one.
func (p *pool) pick() *job {
	for len(p.ready) > 0 {
		id := p.ready[0]
		p.ready = p.ready[1:]
		p.inReady[id] = false
		q := p.queues[id]
		if len(q) == 0 || p.inflight[id] >= p.perEndpoint {
			continue
		}
		j := q[0]
		q[0] = nil
		if len(q) == 1 {
			delete(p.queues, id)
		} else {
			p.queues[id] = q[1:]
		}
		p.inflight[id]++
		p.markReady(id)
		return j
	}
	return nil
}

func (p *pool) finished(j *job) {
	p.held--
	p.observe(j)
	if j.gone {
		// The endpoint is being disabled: what this node still queues for
		// it goes back, to be held.
		for _, q := range p.queues[j.webhookID] {
			p.release(q)
			p.held--
		}
		delete(p.queues, j.webhookID)
	}
	if p.inflight[j.webhookID]--; p.inflight[j.webhookID] <= 0 {
		delete(p.inflight, j.webhookID)
	}
	p.markReady(j.webhookID)
}

// saturated lists the endpoints this node already holds its budget of, so
// that a claim leaves their rows to other nodes or later.
func (p *pool) saturated() []string {
	var out []string
	for id, q := range p.queues {
		if len(q)+p.inflight[id] >= p.budget(id) {
			out = append(out, id)
		}
	}
	return out
}

func (p *pool) runWorkers(ctx context.Context) {
	done := make(chan struct{})
	for range p.workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range p.work {
				p.report(p.s.attempt(ctx, j))
				p.done <- j
			}
		}()
	}
	for range p.workers {
		<-done
	}
}

// attempt sends one job, unless too little of its lease is left to finish
// within it (then it goes back to the queue untouched).
func (s *Service) attempt(ctx context.Context, j *job) outcome {
	now := s.clock.Now()
	timeout := s.timeout()
	if ctx.Err() != nil || now.After(j.leaseUntil.Add(-(timeout + leaseMargin))) {
		return outcome{kind: outcomeRelease, job: j}
	}
	sig := Sign(now, j.body, j.secrets...)
	sctx, span := ctx, trace.SpanFromContext(ctx)
	if email := gjson.GetBytes(j.body, "data.email_id").String(); tracing.On() && email != "" {
		// The delivery of an email's event is a step of the email's trace.
		sctx, span = tracing.Start(tracing.InEmail(ctx, email), "webhook.delivery", attribute.String("mailroom.event", j.eventName),
			attribute.String("mailroom.webhook_id", j.webhookID), attribute.Int("mailroom.attempt", j.attempts+1))
		defer span.End()
	}
	a := Deliver(sctx, s.client.Load(), j.url, j.headers, svixHeaders(j.eventID, now, j.body, j.secrets),
		j.eventID, j.eventName, j.body, sig, now)
	span.SetAttributes(attribute.Int("http.response.status_code", a.StatusCode))
	j.took, j.gone = a.Duration, a.Gone
	if ctx.Err() != nil {
		// Shutting down: the endpoint may or may not have it; it will get
		// it again (at least once), and this does not count as a failure.
		return outcome{kind: outcomeRelease, job: j}
	}
	s.noteAttempt(j, a)
	return outcome{kind: outcomeSent, job: j, attempt: a, at: now, finished: s.clock.Now()}
}

// noteAttempt logs one delivery attempt and counts its outcome: delivered,
// failed (another attempt will follow) or gave_up (none will). The URL's
// query and the body stay out of the log: either may carry a secret.
func (s *Service) noteAttempt(j *job, a Attempt) {
	outcome := "delivered"
	if !a.Success {
		outcome = "failed"
		if _, again := NextDelay(j.attempts+1, a.RetryAfter); !again {
			outcome = "gave_up"
		}
	}
	s.meter.Webhook(outcome)
	lvl := slog.LevelInfo
	if !a.Success {
		lvl = slog.LevelWarn
	}
	s.log.Log(context.Background(), lvl, "webhook attempt", "webhook_id", j.webhookID, "event_id", j.eventID, "event", j.eventName,
		"host", hostOf(j.url), "attempt", j.attempts+1, "status", a.StatusCode, "duration_ms", a.Duration.Milliseconds(),
		"outcome", outcome, "error", a.Err)
}

// hostOf is the host of an endpoint URL, for logs.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// claimed is the answer of one claim.
type claimed struct {
	jobs     []*job
	full     bool // it took as many rows as it asked for
	excluded bool // it left some endpoints' rows alone
}

// claim leases up to want due rows and prepares them to send. It always
// answers on p.claims, with an empty batch on error.
func (p *pool) claim(ctx context.Context, want int, exclude []string) {
	var batch []*job
	defer func() {
		p.claims <- claimed{jobs: batch, full: len(batch) == want, excluded: len(exclude) > 0}
	}()
	s := p.s
	now := s.clock.Now()
	lease := now.Add(Lease)
	token := claimToken(s.node)
	args := []any{store.Millis(lease), token, store.Millis(now)}
	for _, id := range exclude {
		args = append(args, id)
	}
	args = append(args, want, store.Millis(now))
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		batch = batch[:0]
		var err error
		batch, err = store.QueryAll(ctx, tx, func(sc store.Scanner) (*job, error) {
			j := &job{claim: token, leaseUntil: lease}
			return j, sc.Scan(&j.seq, &j.webhookID, &j.workspaceID, &j.eventID, &j.eventSeq, &j.attempts, &j.nextAttemptAt)
		}, p.claimSQL(len(exclude)), args...)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("webhooks: claiming deliveries", "err", err)
		}
		batch = nil
		return
	}
	if len(batch) == 0 {
		return
	}
	if err := s.prepare(context.WithoutCancel(ctx), batch, now); err != nil {
		s.log.Error("webhooks: preparing deliveries", "err", err)
		// Leased but not sendable now: give them back.
		for _, j := range batch {
			p.release(j)
		}
		batch = nil
	}
}

type eventBody struct {
	name string
	body []byte
}

type target struct {
	url     string
	headers map[string]string
	secrets []string
}

// prepare loads the events and endpoints behind claimed rows and builds
// each request: the envelope (one per event, shared by its endpoints) and
// the signing secrets.
func (s *Service) prepare(ctx context.Context, batch []*job, now time.Time) error {
	var evSeqs []any
	seenSeq := map[int64]bool{}
	epIDs := map[string]bool{}
	for _, j := range batch {
		if j.eventSeq.Valid && !seenSeq[j.eventSeq.Int64] {
			seenSeq[j.eventSeq.Int64] = true
			evSeqs = append(evSeqs, j.eventSeq.Int64)
		}
		epIDs[j.webhookID] = true
	}
	bodies, err := s.loadEvents(ctx, evSeqs)
	if err != nil {
		return err
	}
	targets, err := s.loadTargets(ctx, keys(epIDs), now)
	if err != nil {
		return err
	}
	for _, j := range batch {
		ev, ok1 := bodies[j.eventID]
		t, ok2 := targets[j.webhookID]
		if !ok1 || !ok2 {
			j.drop = true
			continue
		}
		j.eventName, j.body = ev.name, ev.body
		j.url, j.headers, j.secrets = t.url, t.headers, t.secrets
	}
	return nil
}

func keys(m map[string]bool) []any {
	out := make([]any, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// loadEvents reads the events with the given seqs (the primary key: events
// have no index on id), keyed by event id.
func (s *Service) loadEvents(ctx context.Context, seqs []any) (map[string]eventBody, error) {
	out := make(map[string]eventBody, len(seqs))
	err := events.Envelopes(ctx, s.db, seqs, func(id, kind string, body []byte) {
		out[id] = eventBody{name: kind, body: body}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
