package wait_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/testkit/wait"
)

// recorder is a testing.TB that records a failure instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	wait.For(t, time.Second, func() bool { return n.Load() == 3 }, "n is %d", n.Load())
}

func TestForFailsAtTheDeadline(t *testing.T) {
	r := &recorder{TB: t}
	began := time.Now()
	wait.For(r, 50*time.Millisecond, func() bool { return false }, "never %s", "true")
	if r.failed == "" || time.Since(began) < 50*time.Millisecond {
		t.Fatalf("failure %q after %v", r.failed, time.Since(began))
	}
	if want := "timed out after 50ms: never true"; r.failed != want {
		t.Fatalf("failure %q, want %q", r.failed, want)
	}
}

func TestUntilAnswersWithoutFailing(t *testing.T) {
	if wait.Until(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Until held a condition that never does")
	}
	if !wait.Until(0, func() bool { return true }) {
		t.Fatal("Until missed a condition that already held")
	}
}
