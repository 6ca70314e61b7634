// Package webhooks delivers the service's events to registered HTTP
// endpoints, as the spec's Events section describes: an at-least-once,
// unordered push of { id, event, timestamp, sequence, data } bodies, signed
// with HMAC-SHA256, retried along a fixed curve, and sent only to public
// addresses unless the operator allows private ones.
//
// This file lists the event kinds; signature.go signs and verifies;
// curve.go holds the retry schedule and endpoint limits; client.go makes the
// SSRF-safe HTTP attempt.
package webhooks

import (
	"strings"

	"mailroom/internal/events"
)

// The complete list of webhook event names (there is no email.opened or
// email.clicked).
const (
	EventEmailSent            = "email.sent"
	EventEmailDelivered       = "email.delivered"
	EventEmailBounced         = "email.bounced"
	EventEmailComplained      = "email.complained"
	EventEmailReceived        = "email.received"
	EventEmailFiltered        = "email.filtered"
	EventDomainVerified       = "domain.verified"
	EventWorkspaceThrottled   = "workspace.throttled"
	EventWorkspacePaused      = "workspace.paused"
	EventWorkspaceResumed     = "workspace.resumed"
	EventAutomationRunStarted = "automation.run.started"
	EventAutomationRunFailed  = "automation.run.failed"
)

// Events returns every event name in the spec's order. The slice is fresh
// and may be modified.
func Events() []string {
	return []string{
		EventEmailSent, EventEmailDelivered, EventEmailBounced, EventEmailComplained,
		EventEmailReceived, EventEmailFiltered, EventDomainVerified,
		EventWorkspaceThrottled, EventWorkspacePaused, EventWorkspaceResumed,
		EventAutomationRunStarted, EventAutomationRunFailed,
	}
}

// Sequence returns the event's place in a message's life (higher is later,
// 0 means no message is behind the event) and whether the name is a webhook
// event. Receivers order by it; equal values are unordered relative to each
// other. The numbers live in one table, the event log's (events.Sequence);
// timeline-only entries there (email.accepted, ...) are not webhook events.
func Sequence(event string) (int, bool) {
	if !events.IsWebhookEvent(event) {
		return 0, false
	}
	return events.Sequence(event)
}

// NormalizeEventName maps a name given at registration to the email.* name
// every read returns. The older message.* spellings (message.sent,
// message.delivered, ...) are still accepted; case and surrounding spaces
// are forgiven.
func NormalizeEventName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if rest, ok := strings.CutPrefix(s, "message."); ok {
		s = "email." + rest
	}
	if _, ok := Sequence(s); !ok {
		return "", false
	}
	return s, true
}

// DefaultEvents is the subscription of an endpoint registered without
// events. The slice is fresh and may be modified.
func DefaultEvents() []string {
	return []string{EventEmailDelivered, EventEmailBounced, EventEmailComplained}
}

// MailboxScoped reports whether the event concerns one mailbox and so may
// reach an endpoint scoped to a single mailbox. Workspace and automation
// events reach only endpoints that are not mailbox-scoped.
func MailboxScoped(event string) bool {
	return !strings.HasPrefix(event, "workspace.") && !strings.HasPrefix(event, "automation.")
}
