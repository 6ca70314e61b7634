package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"

	"mailroom/internal/clock"
)

// shardCount spreads keys over independent locks so that thousands of
// requests per second on two cores do not queue behind one mutex.
const shardCount = 64

// Memory is a single-node Limiter. Each shard keeps the counts of the current
// window only: when the first request of a new window arrives the shard drops
// its whole map, so stale keys never accumulate and no sweeper is needed.
type Memory struct {
	clock  clock.Clock
	seed   maphash.Seed
	shards [shardCount]memoryShard
}

type memoryShard struct {
	mu     sync.Mutex
	window int64
	counts map[string]int64
}

var _ Limiter = (*Memory)(nil)

// NewMemory returns an in-process limiter reading time from c.
func NewMemory(c clock.Clock) *Memory {
	m := &Memory{clock: c, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].counts = make(map[string]int64)
	}
	return m
}

// Allow counts one request for key. It never fails; the error is there to
// satisfy Limiter.
func (m *Memory) Allow(_ context.Context, key string, limit int) (Result, error) {
	start := windowStart(m.clock.Now())
	s := &m.shards[maphash.String(m.seed, key)%shardCount]

	s.mu.Lock()
	switch {
	case start > s.window:
		s.window = start
		s.counts = make(map[string]int64)
	case start < s.window:
		// A caller that read the clock just before the window turned is
		// counted in the new window rather than resurrecting the old one.
		start = s.window
	}
	n := s.counts[key] + 1
	if n <= int64(limit)+1 {
		// Counting past limit+1 would only grow a number nobody reads.
		s.counts[key] = n
	}
	s.mu.Unlock()

	return result(n, limit, start), nil
}

// Seen raises key's count in window start to n (never lowers it): a count
// read from Redis, so that counting here after Redis goes away continues
// from it instead of from zero.
func (m *Memory) Seen(key string, start, n int64) {
	s := &m.shards[maphash.String(m.seed, key)%shardCount]
	s.mu.Lock()
	if start > s.window {
		s.window = start
		s.counts = make(map[string]int64)
	}
	if start == s.window && n > s.counts[key] {
		s.counts[key] = n
	}
	s.mu.Unlock()
}

// Count is key's count in the window that began at start (0 when that is
// not the shard's current window).
func (m *Memory) Count(key string, start int64) int64 {
	s := &m.shards[maphash.String(m.seed, key)%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	if start != s.window {
		return 0
	}
	return s.counts[key]
}
