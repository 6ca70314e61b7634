// Package broadcasts serves the broadcasts routes: one message rendered per
// member of an audience (optionally narrowed by a segment), sent as
// marketing mail on its own delivery lane. A send snapshots its recipients
// (contacts.PeopleQuery says who may be reached and why not), and a
// fan-out job renders and hands them to delivery batch by batch, each
// batch's emails and its recipients' new status in one transaction, so a
// crash repeats at most the batch in flight and a cancel stops every later
// batch.
//
//	POST ─► draft ─┬─ send ──────────► sending ─► sent
//	               └─ send at ─► scheduled ─┘
//	scheduled or sending ─ cancel ─► cancelled
package broadcasts

import (
	"time"

	"mailroom/internal/render"
	"mailroom/internal/tracking"
)

// Status is where a broadcast is in its life.
type Status string

// The broadcast statuses.
const (
	StatusDraft     Status = "draft"
	StatusScheduled Status = "scheduled"
	StatusSending   Status = "sending"
	StatusSent      Status = "sent"
	StatusCancelled Status = "cancelled"
)

// Recipient statuses (spec "Recipient (broadcast)"): pending until handed
// over, then the email's own outcome.
const (
	RcptPending    = "pending"
	RcptSent       = "sent"
	RcptDelivered  = "delivered"
	RcptBounced    = "bounced"
	RcptComplained = "complained"
	RcptFailed     = "failed"
	RcptSkipped    = "skipped"
)

// Broadcast is one stored broadcast.
type Broadcast struct {
	ID          string
	WorkspaceID string
	Name        string
	From        string
	ReplyTo     string
	Subject     string
	HTML        string
	Text        string
	AudienceID  string
	SegmentID   string
	TopicID     string
	TemplateID  string
	TrackOpens  bool
	TrackClicks bool
	Status      Status
	ScheduledAt *time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
	CancelledAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// TemplateVersionID is the template version the fan-out renders: the
	// one asked for (template_version_id), else recorded by its first run
	// ("" until then).
	TemplateVersionID string
	// Footer adds the unsubscribe footer to a body without its own link
	// (unsubscribe_footer, default true).
	Footer bool
}

// Problem is one thing that stops a send, in words a person can act on.
type Problem struct {
	Code    string
	Message string
}

// Stats count a broadcast's recipients by status, and the opens and
// clicks of its emails (zero unless it tracks them).
type Stats struct {
	Total, Pending, Sent, Delivered, Bounced, Complained, Failed, Skipped int
	tracking.Engagement
}

// Recipient is one snapshotted recipient with its current status.
type Recipient struct {
	ID        string
	ContactID string
	Email     string
	Status    string
	Reason    string
	EmailID   string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// builtins are the merge fields every member has.
var builtins = map[string]bool{"email": true, "first_name": true, "last_name": true, "contact_id": true}

// body parses the broadcast's own subject and body (no template).
func (b *Broadcast) body() (*render.Template, error) {
	return render.Parse(b.Subject, b.HTML, b.Text)
}
