// Package delivery turns queued emails into SMTP transactions and their
// outcomes into events: the deliver job (jobs.DeliverArgs) builds the
// message once (internal/outbound), signs it once with the sending domain's
// DKIM key, hands it to the node's transport (a relay or direct MX) with a
// VERP return path, and records each recipient's outcome with its events,
// suppressions and retries. Reports that come back later (RFC 3464 delivery
// status notifications, RFC 5965 feedback reports) arrive through
// internal/smtpin and end up in HandleReport.
package delivery

import (
	"context"
	"crypto"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"mailroom/internal/mailmetrics"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/clock"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/tracking"
)

// Keys gives the DKIM key to sign with; *domains.Service implements it.
type Keys interface {
	// SigningKey is the active key of a verified domain of the workspace,
	// store.ErrNotFound when there is none.
	SigningKey(ctx context.Context, workspaceID, domain string) (selector string, key crypto.Signer, err error)
	// ServiceKey is the service domain's key, used for the sandbox sender.
	ServiceKey(ctx context.Context) (domain, selector string, key crypto.Signer, err error)
	// ReturnPathDomain is the domain of the Return-Path (VERP) of mail
	// from domain: its bounce subdomain once that is published, else the
	// domain itself.
	ReturnPathDomain(ctx context.Context, workspaceID, domain string) (string, error)
}

// Transport is what the engine sends through; *outbound.Relay and
// *outbound.MXTransport implement it.
type Transport interface {
	outbound.Transport
	Close() error
}

// Config assembles a Service.
type Config struct {
	// Meter counts attempts' outcomes, latency and deferrals; nil: none.
	Meter *mailmetrics.Meter
	DB    *store.DB
	Clock clock.Clock
	Log   *slog.Logger
	// Transport carries every message of the node; it pools connections, so
	// there is one per node.
	Transport Transport
	// Keys may be nil: mail then goes out unsigned (only before the domains
	// area is wired).
	Keys Keys
	// ServiceDomain hosts the sandbox sender onboarding@<ServiceDomain>.
	ServiceDomain string
	// VERP signs each message's return path and checks the ones reports
	// quote; required (app makes it from MAILROOM_SECRET_KEY).
	VERP *outbound.VERP
	// Feedback says whose abuse reports are believed (trust.go); the
	// zero value believes none.
	Feedback FeedbackSources
	// Concurrency bounds the emails of batch jobs delivered at once on this
	// node (default 64).
	Concurrency int
	// MarketingConcurrency bounds the marketing emails delivered at once
	// on this node, apart from Concurrency (default as many: each delivery
	// mostly waits for its two commits and the receiving server, and a
	// quarter, then half, left the two cores of bench/broadcast partly
	// idle; docs/performance.md). It also bounds the messages a crash can
	// send twice (accepted by the server, outcome not yet committed), which
	// must stay within a fan-out batch (100): twice as many, 128, broke
	// TestCrashMidFanOut under load.
	MarketingConcurrency int
	// Retry is the wait before each new attempt for recipients that got a
	// temporary failure; nil means DefaultRetrySchedule. After the last wait
	// the next temporary failure bounces them as soft.
	Retry []time.Duration
	// Registry receives the group committer's metrics; nil keeps none.
	Registry prometheus.Registerer
	// Links rewrites the html of tracked emails (track_opens,
	// track_clicks); nil sends them untouched.
	Links *tracking.Links
	// Reputation counts bounces and complaints for the sending policy's
	// pause rule (internal/policy); nil counts nothing.
	Reputation Reputation
	// Sources chooses each message's source address (a workspace's
	// dedicated IP, internal/policy); nil sends from the node's own.
	Sources Sources
	// OptOut gives each recipient of a topic send its own unsubscribe
	// links; nil sends a topic send as one message with its stored headers.
	OptOut OptOut
	// Bodies renders the emails stored without a body (a broadcast's
	// recipients) when their message is built; nil fails them.
	Bodies sending.BodySource
	// Live is the node's liveness: its context ends when the node has
	// gone without a heartbeat long enough that the others may take its
	// work over; in-flight transactions stop and none starts. Nil: always.
	Live func() context.Context
	// OutcomeRetryFor is how long an attempt's outcome write is tried again
	// when it fails (a full disk, a database restarting) before the job is
	// left to run again; default 2 minutes. It must end before the queue
	// rescues the job (app gives half of MAILROOM_JOB_RESCUE_AFTER).
	OutcomeRetryFor time.Duration
}

// Sources is what delivery asks the policy area before a transaction: the
// local address to send a workspace's message from ("" for the node's
// own), the send counted against it.
type Sources interface {
	PickSource(ctx context.Context, workspaceID string) (string, error)
}

// Reputation is what delivery tells the policy area: a real send bounced or
// complained (told after the transaction that records it commits).
type Reputation interface {
	RecordOutcome(workspaceID string, bounced, complained int)
}

// noteOutcome tells the Reputation, once tx commits.
func (s *Service) noteOutcome(tx *store.Tx, workspaceID string, bounced, complained int) {
	if s.rep != nil {
		tx.AfterCommit(func() { s.rep.RecordOutcome(workspaceID, bounced, complained) })
	}
}

// Service is the delivery engine of one node.
type Service struct {
	meter     *mailmetrics.Meter
	db        *store.DB
	clock     clock.Clock
	log       *slog.Logger
	transport Transport
	keys      atomic.Pointer[keysHolder]
	svcDomain string
	verp      *outbound.VERP
	feedback  FeedbackSources
	// reportsIgnored counts reports that changed nothing, by kind and
	// reason (HandleReport).
	reportsIgnored *prometheus.CounterVec
	rep            Reputation
	sources        Sources
	retry          []time.Duration
	writes         *groupCommit
	signers        signerCache
	bufs           outbound.Buffers // messages built and signed; given back once the transports are done (they keep none past Send)
	backoff        *backoff         // receiving domains held back (per-destination shaping)
	holds          *prometheus.CounterVec
	live           func() context.Context
	// unsaved is the duplicate window: from a receiving server's last
	// answer to the commit of the attempt's outcome (a crash inside it
	// sends that message again).
	unsaved prometheus.Histogram
	links   *tracking.Links
	optOut  OptOut
	bodies  sending.BodySource
	// outcomeRetryFor bounds the tries of one outcome write (record).
	outcomeRetryFor time.Duration
	// transactional and marketing are the two lanes' bounds.
	transactional, marketing lane
}

// lane bounds one lane's deliveries: slots those under way at once, builds
// those building and signing their message at once. Builds are CPU work; at
// most one per core leaves the other goroutines (the one SQLite writer that
// commits every outcome above all) a core within a time slice. Unbounded,
// 64 deliveries building at once kept 61 others waiting for their commit
// while the writer waited for a core (goroutine profile, bench/broadcast).
type lane struct {
	slots, builds chan struct{}
	work          chan func() // to an idle worker
}

func newLane(slots int) lane {
	return lane{slots: make(chan struct{}, slots), builds: make(chan struct{}, runtime.GOMAXPROCS(0)), work: make(chan func())}
}

// laneIdle is how long a lane's worker waits for its next delivery.
const laneIdle = 10 * time.Second

// run runs f on one of the lane's slots: an idle worker takes it, or a new
// one starts while fewer than slots run, else it waits for one. Workers
// stay for the next delivery: a new goroutine per email grew its stack
// again in the template engine and SQLite each time (2% of a broadcast's
// CPU, profiled).
func (l lane) run(ctx context.Context, f func()) error {
	select {
	case l.work <- f:
		return nil
	default:
	}
	select {
	case l.work <- f:
		return nil
	case l.slots <- struct{}{}:
		go l.worker(f)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// worker runs f, then whatever run hands it, until it has waited laneIdle;
// it holds one slot throughout.
func (l lane) worker(f func()) {
	idle := time.NewTimer(laneIdle)
	defer func() { <-l.slots }()
	for {
		f()
		idle.Reset(laneIdle)
		select {
		case f = <-l.work:
		case <-idle.C:
			return
		}
	}
}

// New returns the engine.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Retry == nil {
		cfg.Retry = DefaultRetrySchedule()
	}
	if cfg.OutcomeRetryFor <= 0 {
		cfg.OutcomeRetryFor = 2 * time.Minute
	}
	s := &Service{
		meter: cfg.Meter, db: cfg.DB, clock: cfg.Clock, log: cfg.Log, transport: cfg.Transport, links: cfg.Links, optOut: cfg.OptOut, bodies: cfg.Bodies, rep: cfg.Reputation, sources: cfg.Sources,
		svcDomain: strings.ToLower(cfg.ServiceDomain), verp: cfg.VERP, feedback: cfg.Feedback, retry: cfg.Retry, writes: newGroupCommit(cfg.DB, cfg.Log, cfg.Registry),
		backoff: newBackoff(), outcomeRetryFor: cfg.OutcomeRetryFor, live: cfg.Live,
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mailroom_delivery_destination_holds_total",
			Help: "Times a receiving domain was held back, by reason (rate_limit, policy).",
		}, []string{"reason"}),
		unsaved: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mailroom_delivery_outcome_unsaved_seconds",
			Help:    "Time from the receiving server's last answer to the commit of the attempt's outcome: a crash inside it sends the message again.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		reportsIgnored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mailroom_reports_ignored_total",
			Help: "Bounce and feedback reports accepted but not believed or about nothing Mailroom sent, by kind (dsn, arf) and reason.",
		}, []string{"kind", "reason"}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(s.holds, s.unsaved, s.reportsIgnored, newHoldCollector(s))
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	s.transactional = newLane(cfg.Concurrency)
	if cfg.MarketingConcurrency <= 0 {
		cfg.MarketingConcurrency = cfg.Concurrency
	}
	s.marketing = newLane(cfg.MarketingConcurrency)
	s.SetKeys(cfg.Keys)
	return s
}

type keysHolder struct{ k Keys }

// SetKeys replaces the DKIM key source (nil: send unsigned). Wiring that
// builds the domains service after the engine, and tests, use it.
func (s *Service) SetKeys(k Keys) { s.keys.Store(&keysHolder{k}) }

// Start runs the group committer of the claims and outcomes; the worker
// itself runs on the queue. Before Start and after Stop each write commits
// alone.
func (s *Service) Start(ctx context.Context) error { return s.writes.c.Start(ctx) }

// Stop commits the queued writes and stops the committer, then closes the
// transport's idle sessions; sessions in use close when their job ends.
func (s *Service) Stop(context.Context) error {
	s.writes.c.Stop()
	if s.transport == nil {
		return nil
	}
	return s.transport.Close()
}

// DefaultRetrySchedule spaces attempts for temporary failures as MTAs do,
// about three days in all (1+5+15+30 min, 1+2+4 h, then every 8 h): a
// recipient is tried 16 times over about 72 hours before it bounces as
// soft.
func DefaultRetrySchedule() []time.Duration {
	return []time.Duration{
		time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 4 * time.Hour,
		8 * time.Hour, 8 * time.Hour, 8 * time.Hour, 8 * time.Hour, 8 * time.Hour, 8 * time.Hour, 8 * time.Hour, 8 * time.Hour,
	}
}

// errGone means the email is no longer to be delivered (cancelled,
// deleted, already final).
var errGone = errors.New("delivery: email is not waiting for delivery")

// errFenced is the answer of a node that lost its heartbeat: the job runs
// again later, here or on the node that took it over.
var errFenced = errors.New("delivery: this node has no heartbeat; it sends nothing until it beats again")
