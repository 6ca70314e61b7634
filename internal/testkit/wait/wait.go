// Package wait is how tests wait on a condition they can observe (a row,
// a status, a counter), polled until a deadline: For and Until. Where the
// code can say it reached a point, tests wait on internal/testsignal
// instead.
//
// A test that must show something does NOT happen first waits for a
// positive signal that the system got past the point where it would have
// happened (a later event, a drained queue, a snoozed job), then asserts
// the count: never a sleep and a hope.
package wait

import (
	"testing"
	"time"
)

// poll is how often For looks at its condition.
const poll = 10 * time.Millisecond

// For polls cond until it holds, failing t with the message when timeout
// passes first.
func For(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Until(timeout, cond) {
		t.Fatalf("timed out after %v: "+format, append([]any{timeout}, args...)...)
	}
}

// Until polls cond until it holds (true) or timeout passes (false), for
// callers that report the failure themselves or go on either way.
func Until(timeout time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
			if cond() {
				return true
			}
		}
	}
}
