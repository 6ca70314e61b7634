package sending

// EmailStatus is where an email is in its life. It is declared here, with
// the emails table it describes; the delivery engine moves emails along
// the same values.
//
//	           send_at                  promoted (all recipients suppressed: failed)
//	POST ──► scheduled ──────────────────────────► queued
//	  │          │ cancel                          ▲
//	  │          ▼                                 │
//	  │      cancelled                             │
//	  └────────────────────────────────────────────┘ sent now
//
//	queued ──► sending ──► delivered ──► complained   (a complaint arrives later)
//	              │    └─► bounced                    (a DSN may also arrive later)
//	              └──────► failed                     (every recipient suppressed or refused)
//
// A test-mode send goes from queued straight to its simulated end status
// in the accepting transaction. sent is reserved for a relay that accepted
// the message without a per-recipient outcome; nothing sets it yet.
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
