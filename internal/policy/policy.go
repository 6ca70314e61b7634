// Package policy protects a sender's reputation, and so everybody's mail:
// the operator's quotas and caps, the duplicate-content and velocity
// throttles, the automatic pause on bounce or complaint rates, address
// holds and blocked recipient domains (issue 26; CONTRACT-WAVE2, "Policy,
// quotas and dedicated IPs"; docs/decisions.md, "Sending policy").
//
// The send path asks Admit, which answers from memory: counters, not
// scans. Each node counts what it admits and adds its share to the
// database every second (Flush), reading back the totals that every node
// wrote; holds (pauses and the like) are reloaded by every node within
// HoldsPoll of a change anywhere.
package policy

import (
	"context"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/config"
	"mailroom/internal/store"
)

// FlushEvery is how often a node adds its counts to the database and reads
// back the totals: the most a quota can be overrun by several nodes
// together is what they admit in this time.
const FlushEvery = time.Second

// HoldsPoll is how often a node reads policy_version to learn that a hold
// (a pause, a resume, an address state) changed on another node or in the
// CLI. The node that makes a change applies it at once.
const HoldsPoll = 200 * time.Millisecond

// Config builds a Service.
type Config struct {
	DB       *store.DB
	Clock    clock.Clock
	Logger   *slog.Logger
	Settings config.Policy
	// Resolver answers the dedicated IPs' reverse DNS checks
	// (MAILROOM_DNS_RESOLVER); nil answers no names.
	Resolver Resolver
	// HeloName is what an IP's PTR record should name (MAILROOM_HELO_NAME).
	HeloName string
	// SharedIPs is the shared pool (MAILROOM_OUTBOUND_IPS).
	SharedIPs []string
}

// Service is one node's policy: its counters, throttles and holds.
type Service struct {
	db    *store.DB
	clock clock.Clock
	log   *slog.Logger
	set   config.Policy
	seed  maphash.Seed

	resolver Resolver
	helo     string
	shared   []string

	mu       sync.Mutex
	flushMu  sync.Mutex // one Flush at a time: a second one returned before the first's writes had committed
	counters map[ckey]*counter
	spaces   map[string]*wsThrottle
	dirty    map[string]int // workspaces with new bounces or complaints: the flushes still to evaluate them at

	cold        map[[2]string]*coldHistory // (workspace, day) -> its previous 7 days
	coldNew     map[string]map[string]any  // workspaces first refused by the cold throttle since the last flush
	coldChecked map[string]string          // workspace -> the day its throttle was last looked at for clearing

	holds atomic.Pointer[holds]

	ipCache ipCache // workspaces' dedicated IPs, for PickSource

	stop, done chan struct{}
	stopOnce   sync.Once
}

// New builds the service; Start runs its flush and poll loop.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{
		db: cfg.DB, clock: cfg.Clock, log: cfg.Logger, set: cfg.Settings, seed: maphash.MakeSeed(),
		resolver: cfg.Resolver, helo: cfg.HeloName, shared: cfg.SharedIPs,
		counters: map[ckey]*counter{}, spaces: map[string]*wsThrottle{}, dirty: map[string]int{},
		cold: map[[2]string]*coldHistory{}, coldNew: map[string]map[string]any{}, coldChecked: map[string]string{},
	}
	s.holds.Store(&holds{version: -1})
	return s
}

// Settings are the operator's settings in force.
func (s *Service) Settings() config.Policy { return s.set }

// Start loads the holds and runs the loop that flushes counters every
// FlushEvery and polls the holds every HoldsPoll, until Stop.
func (s *Service) Start(ctx context.Context) error {
	if err := s.Refresh(ctx); err != nil {
		return err
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop(context.WithoutCancel(ctx))
	return nil
}

// Stop flushes what is counted and ends the loop; a second call does nothing.
func (s *Service) Stop(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		if s.stop != nil {
			close(s.stop)
			<-s.done
		}
		err = s.Flush(ctx)
	})
	return err
}

func (s *Service) loop(ctx context.Context) {
	defer close(s.done)
	poll := time.NewTicker(HoldsPoll)
	defer poll.Stop()
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-poll.C:
		}
		if err := s.Refresh(ctx); err != nil {
			s.log.Warn("reading sending holds", "err", err)
		}
		if time.Since(last) >= FlushEvery {
			last = time.Now()
			if err := s.Flush(ctx); err != nil {
				s.log.Warn("flushing policy counters", "err", err)
			}
		}
	}
}

// hash64 hashes b with the node's seed (bodies and recipients of the
// duplicate-content rule; never stored).
func (s *Service) hash64(b ...string) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	for _, x := range b {
		h.WriteString(x)
		h.WriteByte(0)
	}
	return h.Sum64()
}
