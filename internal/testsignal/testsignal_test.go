package testsignal_test

import (
	"fmt"
	"testing"
	"time"

	"mailroom/internal/testsignal"
)

// recorder records a failure instead of stopping the test.
type recorder struct{ failed string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestUninitializedSignalDoesNothing(t *testing.T) {
	var s testsignal.Signal[int]
	s.Send(1) // production: no Init, no channel, no block
	s.Drain()
	r := &recorder{}
	s.WaitWithin(r, time.Millisecond)
	if r.failed != "testsignal: waiting on a signal nobody called Init on" {
		t.Fatalf("waiting without Init: %q", r.failed)
	}
}

func TestSignalCountsAndThenNothingElse(t *testing.T) {
	var s testsignal.Signal[int]
	s.Init()
	go func() {
		s.Send(1)
		s.Send(2)
	}()
	if got := s.WaitN(t, 2); got[0] != 1 || got[1] != 2 {
		t.Fatalf("signals %v, want [1 2] in order", got)
	}
	s.RequireEmpty(t)

	s.Send(3)
	r := &recorder{}
	s.RequireEmpty(r)
	if r.failed != "testsignal: an unexpected signal: 3" {
		t.Fatalf("RequireEmpty with one pending: %q", r.failed)
	}
}

func TestDrainForgetsWhatCameBefore(t *testing.T) {
	var s testsignal.Signal[string]
	s.Init()
	s.Send("old")
	s.Send("older")
	s.Drain()
	s.Send("new")
	if v := s.Wait(t); v != "new" {
		t.Fatalf("after Drain got %q", v)
	}
}

func TestSecondInitKeepsTheChannel(t *testing.T) {
	var s testsignal.Signal[int]
	s.Init()
	s.Send(7)
	s.Init() // a second test helper asking for the same signal
	if v := s.Wait(t); v != 7 {
		t.Fatalf("a second Init lost a pending signal: %v", v)
	}
}

func TestWaitFailsWhenNoneComes(t *testing.T) {
	var s testsignal.Signal[string]
	s.Init()
	r := &recorder{}
	if v := s.WaitWithin(r, 10*time.Millisecond); v != "" || r.failed != "testsignal: no signal within 10ms" {
		t.Fatalf("got %q, failure %q", v, r.failed)
	}
}

func TestSendNeverBlocks(t *testing.T) {
	var s testsignal.Signal[int]
	s.Init()
	for i := range 5000 { // past the buffer: dropped, not blocked
		s.Send(i)
	}
	if v := s.Wait(t); v != 0 {
		t.Fatalf("first signal %d, want 0", v)
	}
}
