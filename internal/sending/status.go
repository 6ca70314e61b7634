package sending

// EmailStatus is where an email is in its life. It is declared here, with
// the emails table it describes; the delivery engine moves emails along
// the same values through this package (MarkSending, WriteOutcome, ...).
//
//	POST ─► queued ─► sending ─┬─► delivered ─► complained (a report, later)
//	  │       ▲                ├─► bounced    (no recipient took it)
//	  │       │ due            └─► failed     (every recipient suppressed)
//	  ▼       │
//	scheduled ┼─► cancelled
//	          └─► failed (every recipient suppressed when due)
//
// A queued email also fails at once when its message cannot be built or
// its domain lost its key. A test-mode send goes from queued straight to
// its simulated end (delivered, bounced or failed) in the accepting
// transaction. sent is reserved for a hand-off without a per-recipient
// outcome; nothing sets it yet.
type EmailStatus string

// The values of EmailStatus, in lifecycle order.
const (
	StatusScheduled  EmailStatus = "scheduled"  // booked with send_at; may be rescheduled or cancelled
	StatusCancelled  EmailStatus = "cancelled"  // cancelled while scheduled; final
	StatusQueued     EmailStatus = "queued"     // accepted; its delivery job is enqueued
	StatusSending    EmailStatus = "sending"    // the delivery engine has started on it
	StatusSent       EmailStatus = "sent"       // reserved: handed on without a final outcome
	StatusDelivered  EmailStatus = "delivered"  // at least one recipient's server took it
	StatusBounced    EmailStatus = "bounced"    // no recipient took it and at least one bounced
	StatusComplained EmailStatus = "complained" // delivered, then reported as spam
	StatusFailed     EmailStatus = "failed"     // never sent: suppressed, refused or abandoned
)
