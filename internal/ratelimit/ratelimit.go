// Package ratelimit counts requests per key in fixed 60-second windows
// aligned to the unix minute, as the spec's Limits section describes
// ("600 requests per minute per API key"). Aligned windows make every node
// agree on the window without coordination and give a RateLimit-Reset that
// is the same for all keys at a given moment.
//
// Memory serves a single node; Redis lets several nodes share one budget.
package ratelimit

import (
	"context"
	"time"
)

// Window is the length of one counting window.
const Window = time.Minute

// Result is the outcome of one Allow call, enough to write the RateLimit-*
// and X-RateLimit-* headers.
type Result struct {
	Limit     int
	Remaining int       // never negative; 0 once the budget is spent
	Reset     time.Time // end of the current window
	Allowed   bool
}

// RetryAfter is the wait a refused caller should be told about (whole
// seconds, at least one so that a client never retries in a tight loop).
func (r Result) RetryAfter(now time.Time) time.Duration {
	d := r.Reset.Sub(now)
	if d < time.Second {
		return time.Second
	}
	return d.Truncate(time.Second)
}

// Limiter counts one request against key's budget of limit per window.
// A limit below 1 allows nothing.
type Limiter interface {
	Allow(ctx context.Context, key string, limit int) (Result, error)
}

// windowStart returns the unix second at which t's window began.
func windowStart(t time.Time) int64 {
	s := t.Unix()
	w := int64(Window / time.Second)
	return s - ((s%w)+w)%w
}

// result turns the request's position in the window (1-based) into a Result.
func result(count int64, limit int, start int64) Result {
	rem := int64(limit) - count
	if rem < 0 {
		rem = 0
	}
	return Result{
		Limit:     limit,
		Remaining: int(rem),
		Reset:     time.Unix(start, 0).UTC().Add(Window),
		Allowed:   limit > 0 && count <= int64(limit),
	}
}
