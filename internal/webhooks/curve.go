package webhooks

import "time"

// Delivery limits from the spec's Delivery guarantee, Webhook endpoint state
// table and Operation limits.
const (
	// MaxAttempts is how many times one event is tried before it is abandoned.
	MaxAttempts = 7
	// Timeout is how long an endpoint has to answer 2xx.
	Timeout = 10 * time.Second
	// RetryAfterCap bounds an endpoint's own Retry-After.
	RetryAfterCap = time.Hour
	// AutoDisableFailures and AutoDisableSilence must both be reached before
	// an active endpoint is disabled for failing.
	AutoDisableFailures = 20
	AutoDisableSilence  = 18 * time.Hour
	// HoldMax and HoldTTL bound the events held for a disabled endpoint; the
	// oldest are dropped beyond either.
	HoldMax = 500
	HoldTTL = 7 * 24 * time.Hour
	// ResponseBodyCap is how much of an endpoint's answer is stored on the
	// delivery row: enough to read an error page's message, not a whole page.
	ResponseBodyCap = 4 << 10
)

// RetryDelays is the wait before each attempt (index 0 is the first
// attempt, sent at once). The list read of webhooks publishes it as
// retry_delays_sec. Treat it as read-only.
var RetryDelays = []time.Duration{
	0,
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
}

// RetryWindow is the time from the first attempt to the last along the
// curve (17 h 35 min 5 s), published as retry_window_sec.
func RetryWindow() time.Duration {
	var sum time.Duration
	for _, d := range RetryDelays {
		sum += d
	}
	return sum
}

// NextDelay returns the wait before attempt attemptsMade+1, or false when
// all MaxAttempts have been made and the event is to be abandoned. A positive
// retryAfter (the endpoint's own Retry-After) replaces the curve's wait,
// capped at RetryAfterCap; it does not add an attempt.
func NextDelay(attemptsMade int, retryAfter time.Duration) (time.Duration, bool) {
	if attemptsMade >= MaxAttempts {
		return 0, false
	}
	if attemptsMade < 0 {
		attemptsMade = 0
	}
	if retryAfter > 0 {
		return min(retryAfter, RetryAfterCap), true
	}
	return RetryDelays[attemptsMade], true
}

// ShouldAutoDisable reports whether an active endpoint is to be disabled for
// failing: AutoDisableFailures consecutive failures AND nothing accepted for
// AutoDisableSilence. lastAccepted is the last 2xx, or the endpoint's creation
// (or re-activation) time when it has none. A 410 Gone disables at once and
// does not go through this check.
func ShouldAutoDisable(consecutiveFailures int, lastAccepted, now time.Time) bool {
	return consecutiveFailures >= AutoDisableFailures && now.Sub(lastAccepted) >= AutoDisableSilence
}
