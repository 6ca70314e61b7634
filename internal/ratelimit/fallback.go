package ratelimit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of a Fallback.
const (
	// DefaultRedisTimeout bounds one Redis call, so that an unreachable
	// Redis (a dropped packet, not a refused connection) delays a request by
	// at most this much before it is counted in memory.
	DefaultRedisTimeout = 500 * time.Millisecond
	// DefaultProbeEvery is how often, during an outage, one request tries
	// Redis again; the others are counted in memory without waiting.
	DefaultProbeEvery = time.Second
)

// Fallback counts in Redis and, while Redis cannot be reached, in this
// node's memory: each node then enforces the whole budget on its own (so a
// key may get up to one budget per node), instead of dropping rate limiting
// and its headers. The outage is logged once when it starts and once when it
// ends; meanwhile one request per ProbeEvery tries Redis, and the first that
// succeeds moves counting back. The window's count carries across a switch
// in both directions, erring towards counting more: the memory counter of a
// key starts from the last count Redis gave this node for it, and what was
// counted in memory during the outage is added to Redis before it counts
// again (per node, so a key gets at most one budget per node in a window
// while Redis is away, and never a fresh one at a switch).
type Fallback struct {
	redis *Redis
	local *Memory
	log   *slog.Logger
	// RedisTimeout and ProbeEvery default to DefaultRedisTimeout and
	// DefaultProbeEvery; set them before the first Allow.
	RedisTimeout time.Duration
	ProbeEvery   time.Duration

	mu        sync.Mutex
	down      bool      // counting in memory
	since     time.Time // start of the outage
	lastProbe time.Time // start of the newest try during the outage
	probing   bool      // a request is trying Redis for the outage

	// pending are the counts made in memory during the outage, in the
	// window that began at pendingStart: added to Redis when it is back.
	pending      map[string]int64
	pendingStart int64

	degraded  prometheus.Gauge
	fallbacks prometheus.Counter
}

var (
	_ Limiter              = (*Fallback)(nil)
	_ prometheus.Collector = (*Fallback)(nil)
)

// NewFallback returns a limiter counting through r, and through m while r
// fails. log (nil for none) receives one line per outage start and end.
func NewFallback(r *Redis, m *Memory, log *slog.Logger) *Fallback {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Fallback{
		redis: r, local: m, log: log,
		RedisTimeout: DefaultRedisTimeout, ProbeEvery: DefaultProbeEvery,
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mailroom_ratelimit_degraded",
			Help: "1 while Redis is unreachable and this node counts rate limits in its own memory.",
		}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mailroom_ratelimit_fallback_total",
			Help: "Requests counted in this node's memory because Redis was unreachable.",
		}),
	}
}

// Allow counts one request for key, in Redis when it answers, else in
// memory. It never fails.
func (f *Fallback) Allow(ctx context.Context, key string, limit int) (Result, error) {
	if probe, ok := f.tryRedis(); ok {
		rctx, cancel := context.WithTimeout(ctx, f.RedisTimeout)
		var err error
		if probe {
			err = f.flush(rctx)
		}
		var n, start int64
		if err == nil {
			n, start, err = f.redis.count(rctx, key)
		}
		cancel()
		switch {
		case err == nil:
			f.markUp()
			f.local.Seen(key, start, n)
			return result(n, limit, start), nil
		case ctx.Err() != nil:
			// The caller gave up: that says nothing about Redis.
			f.endProbe()
		default:
			f.markDown(err)
		}
	}
	f.fallbacks.Inc()
	res, err := f.local.Allow(ctx, key, limit)
	f.note(key, res)
	return res, err
}

// note records one request counted in memory, for Redis when it is back.
func (f *Fallback) note(key string, res Result) {
	start := res.Reset.Add(-Window).Unix()
	f.mu.Lock()
	defer f.mu.Unlock()
	if start != f.pendingStart || f.pending == nil {
		f.pending, f.pendingStart = map[string]int64{}, start
	}
	if f.pending[key] <= int64(res.Limit) {
		f.pending[key]++ // past limit+1 nobody reads it, as in Memory
	}
}

// flush adds the outage's counts of the current window to Redis, before
// the probe's own request counts there.
func (f *Fallback) flush(ctx context.Context) error {
	f.mu.Lock()
	counts, start := f.pending, f.pendingStart
	f.mu.Unlock()
	if len(counts) == 0 || start != windowStart(f.redis.clock.Now()) {
		return nil
	}
	carried := make(map[string]Carried, len(counts))
	for key, n := range counts {
		carried[key] = Carried{Added: n, Total: f.local.Count(key, start)}
	}
	if err := f.redis.Add(ctx, start, carried); err != nil {
		return err
	}
	f.mu.Lock()
	if f.pendingStart == start {
		f.pending = nil
	}
	f.mu.Unlock()
	return nil
}

// tryRedis reports whether this request should go to Redis: always while
// it is up, and for one request per ProbeEvery while it is down (probe).
func (f *Fallback) tryRedis() (probe, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.down {
		return false, true
	}
	if f.probing || time.Since(f.lastProbe) < f.ProbeEvery {
		return false, false
	}
	f.probing, f.lastProbe = true, time.Now()
	return true, true
}

func (f *Fallback) endProbe() {
	f.mu.Lock()
	f.probing = false
	f.mu.Unlock()
}

func (f *Fallback) markUp() {
	f.mu.Lock()
	was, since := f.down, f.since
	f.down, f.probing = false, false
	if was {
		f.degraded.Set(0)
	}
	f.mu.Unlock()
	if was {
		f.log.Info("rate limiter: Redis is reachable again; counting in Redis", "outage", time.Since(since).Round(time.Millisecond).String())
	}
}

func (f *Fallback) markDown(err error) {
	f.mu.Lock()
	was := f.down
	now := time.Now()
	if !was {
		f.down, f.since = true, now
	}
	f.probing, f.lastProbe = false, now
	if !was {
		f.degraded.Set(1)
	}
	f.mu.Unlock()
	if !was {
		f.log.Warn("rate limiter: Redis unreachable; each node counts in its own memory until it is back", "err", err)
	}
}

// Degraded says why counting is in memory, or "" while Redis serves it.
// /readyz shows it.
func (f *Fallback) Degraded() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.down {
		return ""
	}
	return "rate limiter: Redis unreachable since " + f.since.UTC().Format(time.RFC3339) + "; counting in this node's memory"
}

// Describe implements prometheus.Collector.
func (f *Fallback) Describe(ch chan<- *prometheus.Desc) {
	f.degraded.Describe(ch)
	f.fallbacks.Describe(ch)
}

// Collect implements prometheus.Collector.
func (f *Fallback) Collect(ch chan<- prometheus.Metric) {
	f.degraded.Collect(ch)
	f.fallbacks.Collect(ch)
}
