// Package testsignal lets code tell a test that it reached a point ("a
// claim found nothing to do"), so the test waits on that instead of
// sleeping (after river's rivershared/testsignal). A Signal costs a nil
// check until a test calls Init; production never does.
package testsignal

import (
	"sync/atomic"
	"time"
)

// Timeout is how long Wait waits: long enough for a loaded CI machine,
// short enough that a missing signal fails the test soon.
const Timeout = 10 * time.Second

// buffer bounds pending signals; past it new ones are dropped rather than
// block the code that sends them (a test Drains before it waits).
const buffer = 1000

// TB is the part of testing.TB a wait needs (this package does not import
// testing: production code imports it).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Signal carries values from the code under test to a test. The zero
// value does nothing until Init.
type Signal[T any] struct {
	ch atomic.Pointer[chan T]
}

// Init makes the signal live; it is safe while the code already runs.
func (s *Signal[T]) Init() *Signal[T] {
	ch := make(chan T, buffer)
	s.ch.CompareAndSwap(nil, &ch)
	return s
}

// Send records v if a test called Init; it never blocks.
func (s *Signal[T]) Send(v T) {
	if p := s.ch.Load(); p != nil {
		select {
		case *p <- v:
		default:
		}
	}
}

func (s *Signal[T]) channel(t TB) chan T {
	p := s.ch.Load()
	if p == nil {
		t.Helper()
		t.Fatalf("testsignal: waiting on a signal nobody called Init on")
		return nil
	}
	return *p
}

// Wait returns the next signal, failing t after Timeout.
func (s *Signal[T]) Wait(t TB) T {
	t.Helper()
	return s.WaitWithin(t, Timeout)
}

// WaitWithin returns the next signal, failing t after d.
func (s *Signal[T]) WaitWithin(t TB, d time.Duration) T {
	t.Helper()
	var zero T
	ch := s.channel(t)
	if ch == nil {
		return zero
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("testsignal: no signal within %v", d)
		return zero
	}
}

// WaitN returns the next n signals, each within Timeout of the last.
func (s *Signal[T]) WaitN(t TB, n int) []T {
	t.Helper()
	out := make([]T, 0, n)
	for range n {
		out = append(out, s.Wait(t))
	}
	return out
}

// RequireEmpty fails t if a signal is pending: the "and nothing else"
// after the expected ones were counted.
func (s *Signal[T]) RequireEmpty(t TB) {
	t.Helper()
	select {
	case v := <-s.channel(t):
		t.Fatalf("testsignal: an unexpected signal: %v", v)
	default:
	}
}

// Drain drops the pending signals, so the next Wait sees only what is
// sent from now on.
func (s *Signal[T]) Drain() {
	p := s.ch.Load()
	if p == nil {
		return
	}
	for {
		select {
		case <-*p:
		default:
			return
		}
	}
}
