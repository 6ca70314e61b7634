package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mailroom/internal/clock"
	"mailroom/internal/groupcommit"
	"mailroom/internal/mailmetrics"
	"mailroom/internal/secretbox"
	"mailroom/internal/store"
	"mailroom/internal/testsignal"
)

// SecretGrace is how long the previous signing secret keeps signing after a
// rotation (published as previous_secret_valid_until).
const SecretGrace = 24 * time.Hour

// Lease is how long a worker holds a delivery row it claimed. A node killed
// mid-delivery leaves its rows leased; they come due again when the lease
// ends, which is what makes delivery at-least-once across crashes. It must
// exceed Timeout by a margin, since an attempt only starts while at least
// Timeout+leaseMargin of the lease remains.
const (
	Lease       = 30 * time.Second
	leaseMargin = 2 * time.Second
)

// Tuning of the dispatcher and the delivery pool.
const (
	pollInterval   = 200 * time.Millisecond // other nodes' events and due retries
	eventBatch     = 500                    // events fanned out per transaction
	maxClaim       = 500                    // delivery rows claimed per query
	flushInterval  = 5 * time.Millisecond   // how long an outcome waits for company
	flushBatch     = 512                    // outcomes written per transaction at most
	housekeepEvery = time.Minute
	// LogRetention is how long delivery log rows are kept by default
	// (Options.LogRetention, MAILROOM_RETAIN_WEBHOOK_LOGS).
	LogRetention = 30 * 24 * time.Hour
)

// Options configure a Service.
type Options struct {
	DB    *store.DB
	Clock clock.Clock
	Box   *secretbox.Box
	Log   *slog.Logger
	// AllowPrivate lets endpoints be http:// and reach loopback and private
	// addresses (MAILROOM_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
	// Concurrency is the number of deliveries in flight at once on this
	// node (MAILROOM_WEBHOOK_CONCURRENCY); 0 means 64.
	Concurrency int
	// Node names this node in its delivery leases, so that when it is gone
	// another node releases them at once (ReleaseClaims).
	Node string
	// Registry receives the outcome recorder's metrics; nil keeps none.
	Registry prometheus.Registerer
	// SentFrom maps the emails among ids to the mailbox each was sent from
	// (absent: none), so that an endpoint scoped to a mailbox gets the events
	// of that mailbox's outgoing mail only; app hands in inbound.SentFrom
	// (webhooks cannot import the areas that own emails and mailboxes). nil:
	// no email event reaches a mailbox-scoped endpoint.
	SentFrom SentFrom
	// Meter counts delivery attempts by outcome; nil counts nothing.
	Meter *mailmetrics.Meter
	// LogRetention is how long delivery log rows are kept; 0: LogRetention.
	LogRetention time.Duration
}

// SentFrom is Options.SentFrom.
type SentFrom func(ctx context.Context, q store.Querier, ids []string) (map[string]string, error)

// Service manages webhook endpoints and delivers the event log to them. It
// is also the node's background part that does the delivering (Start/Stop).
type Service struct {
	db           *store.DB
	clock        clock.Clock
	box          *secretbox.Box
	log          *slog.Logger
	allowPrivate bool
	concurrency  int
	node         string
	sentFrom     SentFrom
	meter        *mailmetrics.Meter
	logRetention time.Duration
	client       clientRef

	secretsMu sync.Mutex
	secrets   map[string]string // sealed -> plaintext

	kickDispatch chan struct{}
	kickPool     chan struct{}
	recorder     *groupcommit.Committer[outcome] // the delivery pool's outcomes
	tail         *tail                           // the event streams' view of the log's end

	runMu   sync.Mutex
	cancel  context.CancelFunc
	running sync.WaitGroup

	// TestSignals tell a test where the loops are; inert until it calls
	// Init on one.
	TestSignals TestSignals
}

// TestSignals are the points the delivery loops report to tests.
type TestSignals struct {
	// Claimed: the pool took a claim's answer (sent from its loop).
	Claimed testsignal.Signal[Claimed]
}

// Claimed is what a claim leased and what the pool then held: with both
// zero, nothing was due when the claim ran and nothing is in flight.
type Claimed struct {
	Leased int // rows this claim leased
	Held   int // claimed jobs not finished, queued or in flight
}

// New builds the service. Nothing runs until Start.
func New(o Options) *Service {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	s := &Service{
		db: o.DB, clock: o.Clock, box: o.Box, log: o.Log,
		allowPrivate: o.AllowPrivate, concurrency: o.Concurrency, node: o.Node, sentFrom: o.SentFrom, meter: o.Meter, logRetention: o.LogRetention,
		secrets:      map[string]string{},
		kickDispatch: make(chan struct{}, 1),
		kickPool:     make(chan struct{}, 1),
	}
	s.client.Store(NewHTTPClient(o.AllowPrivate))
	settle := time.Duration(0)
	if o.DB != nil && o.DB.ConcurrentCommits() {
		settle = tailSettle
	}
	s.tail = newTail(settle)
	s.recorder = newRecorder(s, o.Registry)
	return s
}

// Kick makes the dispatcher and the delivery pool look for work now rather
// than at their next poll: after a fake clock was advanced, for instance.
func (s *Service) Kick() {
	for _, ch := range []chan struct{}{s.kickDispatch, s.kickPool} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Start runs the dispatcher (event log -> delivery rows) and the delivery
// pool (delivery rows -> HTTP attempts) until Stop.
func (s *Service) Start(ctx context.Context) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.cancel != nil {
		return errors.New("webhooks: already started")
	}
	if err := s.recorder.Start(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.running.Add(3)
	go func() {
		defer s.running.Done()
		s.dispatchLoop(ctx)
	}()
	go func() {
		defer s.running.Done()
		s.tailLoop(ctx)
	}()
	go func() {
		defer s.running.Done()
		newPool(s).run(ctx)
	}()
	return nil
}

// Stop ends the loops. Attempts in flight are cancelled; their rows stay
// leased and come due again when the lease ends (or at once on the next
// start, which is another node as far as the rows can tell). A second call
// does nothing.
func (s *Service) Stop(ctx context.Context) error {
	s.runMu.Lock()
	cancel := s.cancel
	s.runMu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		s.recorder.Stop() // writes the outcomes the pool handed over
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// openSecret decrypts a sealed signing secret, remembering the answer: the
// pool signs thousands of deliveries a second with a handful of secrets.
func (s *Service) openSecret(sealed string) (string, error) {
	s.secretsMu.Lock()
	if v, ok := s.secrets[sealed]; ok {
		s.secretsMu.Unlock()
		return v, nil
	}
	s.secretsMu.Unlock()
	b, err := s.box.Open(sealed)
	if err != nil {
		return "", err
	}
	s.secretsMu.Lock()
	if len(s.secrets) > 10000 {
		clear(s.secrets)
	}
	s.secrets[sealed] = string(b)
	s.secretsMu.Unlock()
	return string(b), nil
}

// signingSecrets returns the secrets a delivery is signed with at now: the
// current one, and the previous one during a rotation's grace window.
func (s *Service) signingSecrets(sealed string, prevSealed *string, prevUntil *int64, now time.Time) ([]string, error) {
	cur, err := s.openSecret(sealed)
	if err != nil {
		return nil, err
	}
	out := []string{cur}
	if prevSealed != nil && prevUntil != nil && now.Before(store.FromMillis(*prevUntil)) {
		prev, err := s.openSecret(*prevSealed)
		if err != nil {
			return nil, err
		}
		out = append(out, prev)
	}
	return out, nil
}
