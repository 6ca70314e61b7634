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
	"html"
	"strings"
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

// vars are a member's merge fields: its attributes (membership's over
// contact's) and the builtins.
func vars(email, first, last, contactID string, attrs ...map[string]string) map[string]any {
	v := map[string]any{}
	for _, a := range attrs {
		for k, x := range a {
			v[k] = x
		}
	}
	// Each merge field also answers to its lowercase name, as Mailchimp's
	// *|COMPANY|* is read ({{ company }}), unless a field has that name.
	for k, x := range v {
		if l := strings.ToLower(k); l != k {
			if _, ok := v[l]; !ok {
				v[l] = x
			}
		}
	}
	v["email"], v["contact_id"] = email, contactID
	// The contact's names, unless empty and a merge field of the same name
	// is set (an import's first_name lands among the membership's fields).
	for k, x := range map[string]string{"first_name": first, "last_name": last} {
		if _, ok := v[k]; !ok || x != "" {
			v[k] = x
		}
	}
	return v
}

// body parses the broadcast's own subject and body (no template).
func (b *Broadcast) body() (*render.Template, error) {
	return render.Parse(b.Subject, b.HTML, b.Text)
}

// footerMark tells a footer Mailroom added: a body that already has one
// gets no second.
const footerMark = "mailroom-unsubscribe-footer"

// addFooter gives a body that shows no unsubscribe link of its own (the
// recipient's URL is nowhere in it) a small plain footer with the link and
// the preference page, in both parts: html before </body> when there is
// one, else at the end; never inside a tag, never twice.
func addFooter(out render.Output, l Links) render.Output {
	if out.HTML != "" && !strings.Contains(out.HTML, l.Unsubscribe) && !strings.Contains(out.HTML, footerMark) {
		f := `<div class="` + footerMark + `" style="margin-top:24px;font-size:12px;color:#666">` +
			`You receive this because you subscribed. <a href="` + html.EscapeString(l.Unsubscribe) + `">Unsubscribe</a>`
		if l.Preferences != "" {
			f += ` · <a href="` + html.EscapeString(l.Preferences) + `">Email preferences</a>`
		}
		f += `</div>`
		if i := lastBodyClose(out.HTML); i >= 0 {
			out.HTML = out.HTML[:i] + f + out.HTML[i:]
		} else {
			out.HTML += f
		}
	}
	if out.Text != "" && !strings.Contains(out.Text, l.Unsubscribe) {
		t := "\n\n--\nUnsubscribe: " + l.Unsubscribe
		if l.Preferences != "" {
			t += "\nEmail preferences: " + l.Preferences
		}
		out.Text += t + "\n"
	}
	return out
}

// lastBodyClose is the index of the last "</body>" in any case, or -1,
// without a lowered copy of the body for each recipient.
func lastBodyClose(h string) int {
	for i := strings.LastIndex(h, "</"); i >= 0; i = strings.LastIndex(h[:i], "</") {
		if len(h)-i >= 7 && strings.EqualFold(h[i:i+7], "</body>") {
			return i
		}
	}
	return -1
}
