package sending

import (
	"strconv"
	"strings"
	"time"
)

// Test address kinds: the four reserved mailboxes at the service domain.
const (
	TestDelivered  = "delivered"
	TestBounced    = "bounced"
	TestComplained = "complained"
	TestSuppressed = "suppressed"
)

// Scenario address kinds, beside the spec's four (docs/test-addresses.md):
// each plays out a story over time through the same events and webhooks.
const (
	ScenarioSoftBounce = "softbounce" // deferred once, delivered on the retry
	ScenarioDeferred   = "deferred"   // deferred for the label's duration, then delivered
	ScenarioAutoReply  = "autoreply"  // delivered, then an out-of-office reply reaches the sender's mailbox
	ScenarioOpened     = "opened"     // delivered, then opened as a person would (tracking on)
	ScenarioClicked    = "clicked"    // delivered, then opened and its first link clicked (tracking on)
)

// MaxScenarioDelay bounds a scenario's +<duration> label.
const MaxScenarioDelay = time.Hour

// scenarioDelays are each kind's wait when its label names no duration:
// the complaint, the retry after a soft bounce, the end of a deferral, the
// auto-reply, the open or click.
var scenarioDelays = map[string]time.Duration{
	TestComplained:     ComplaintDelay,
	ScenarioSoftBounce: 10 * time.Second,
	ScenarioDeferred:   5 * time.Minute,
	ScenarioAutoReply:  5 * time.Second,
	ScenarioOpened:     10 * time.Second,
	ScenarioClicked:    10 * time.Second,
}

// ClassifyTestAddress reports whether email is one of the reserved test
// addresses at serviceDomain: delivered@, bounced@, complained@ or
// suppressed@, or one of the scenario addresses (softbounce@, deferred@,
// autoreply@, opened@, clicked@), optionally sub-addressed as
// delivered+<label>@. The local part and domain compare without case; kind
// is lowercase and label keeps the caller's spelling so it can be told
// apart in the log.
func ClassifyTestAddress(email, serviceDomain string) (kind, label string, ok bool) {
	at := strings.LastIndexByte(email, '@')
	if at < 0 || serviceDomain == "" {
		return "", "", false
	}
	local, domain := email[:at], email[at+1:]
	if !strings.EqualFold(strings.TrimSuffix(domain, "."), strings.TrimSuffix(serviceDomain, ".")) {
		return "", "", false
	}
	base, label, _ := strings.Cut(local, "+")
	switch k := strings.ToLower(base); k {
	case TestDelivered, TestBounced, TestComplained, TestSuppressed,
		ScenarioSoftBounce, ScenarioDeferred, ScenarioAutoReply, ScenarioOpened, ScenarioClicked:
		return k, label, true
	}
	return "", "", false
}

// scenarioDelay is how long kind waits: the label when it is a duration
// such as 30s, 5m or 1h (at most MaxScenarioDelay, at least a second),
// else the kind's default. Any other label is only a label.
func scenarioDelay(kind, label string) time.Duration {
	if d, ok := labelDuration(label); ok {
		return d
	}
	return scenarioDelays[kind]
}

// labelDuration reads a label of digits and one unit, s, m or h.
func labelDuration(label string) (time.Duration, bool) {
	if len(label) < 2 {
		return 0, false
	}
	unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour}[label[len(label)-1]|0x20]
	n, err := strconv.Atoi(label[:len(label)-1])
	if unit == 0 || err != nil || n < 1 || label[0] == '+' {
		return 0, false
	}
	if n > int(MaxScenarioDelay/unit) {
		return MaxScenarioDelay, true
	}
	return time.Duration(n) * unit, true
}
