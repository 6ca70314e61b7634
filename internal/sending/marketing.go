package sending

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"mailroom/internal/mailmetrics"

	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/outbound"
	"mailroom/internal/store"
)

// Mail classes (emails.mail_class).
const (
	ClassTransactional = "transactional"
	ClassMarketing     = "marketing"
)

// MarketingEmail is one rendered marketing message to one recipient (a
// broadcast's member). From and ReplyTo are formatted addresses the
// caller has checked; To is a bare address.
type MarketingEmail struct {
	From    string
	ReplyTo []string
	To      string
	Subject string
	HTML    string
	Text    string
	Headers map[string]string
	Tags    map[string]string
	// TrackOpens and TrackClicks track the email, so delivery adds the
	// pixel and rewrites the links for this recipient; its tracking row
	// is written at its first open or click (TrackingBooking).
	TrackOpens, TrackClicks bool
	// BodySource, when set, stores the email without HTML, Text and
	// Headers: the service's BodySource renders them from it when the
	// email is sent or read (a broadcast recipient's row).
	BodySource string
}

// shareKey is what makes emails share an email_shared row.
type shareKey struct {
	from, replyTo, tags string
	track               int
}

// AcceptMarketing stores the emails as queued marketing mail in the
// caller's transaction and hands them, with that commit, to the delivery
// engine's marketing lane in one batch job. It returns their ids in order.
// Suppressions are checked again by delivery at send time.
func (s *Service) AcceptMarketing(ctx context.Context, tx *store.Tx, workspaceID string, ms []MarketingEmail, now time.Time) ([]string, error) {
	out := make([]string, 0, len(ms))
	var a acceptBatch
	refs := make([]jobs.EmailRef, 0, len(ms))
	var sources []string
	for _, m := range ms {
		if m.BodySource != "" {
			sources = append(sources, m.BodySource)
		}
	}
	prefix := sourcePrefix(sources)
	// What the emails have alike (a broadcast's From, Reply-To, tags and
	// tracking flags) is stored once, in email_shared. Their tracking is
	// booked late, at an email's first open or click (TrackingBooking):
	// most recipients never open or click.
	shares := map[shareKey]*shared{}
	keys := make([]shareKey, len(ms))
	for i, m := range ms {
		if i > 0 && m.From == ms[i-1].From && slices.Equal(m.ReplyTo, ms[i-1].ReplyTo) && maps.Equal(m.Tags, ms[i-1].Tags) &&
			m.TrackOpens == ms[i-1].TrackOpens && m.TrackClicks == ms[i-1].TrackClicks {
			keys[i] = keys[i-1]
			continue
		}
		key := shareKey{m.From, jsonText(m.ReplyTo, "[]"), jsonText(m.Tags, "{}"), trackFlags(m.TrackOpens, m.TrackClicks)}
		keys[i] = key
		if shares[key] != nil {
			continue
		}
		id, err := shareRow(ctx, tx, workspaceID, key.from, key.replyTo, key.tags, prefix, ClassMarketing, key.track, now)
		if err != nil {
			return nil, err
		}
		shares[key] = &shared{ID: id, SourcePrefix: prefix}
	}
	for i, m := range ms {
		id := ids.New("em")
		from := m.From
		if a, err := ParseAddress(m.From); err == nil {
			from = a.Email
		}
		e := &emailRow{ID: id, WorkspaceID: workspaceID, Status: StatusQueued, From: m.From, To: []string{m.To}, ReplyTo: m.ReplyTo,
			Subject: m.Subject, HTML: m.HTML, Text: m.Text, Headers: m.Headers, Tags: m.Tags, BodySource: m.BodySource,
			MessageID: outbound.MessageIDFor(id, domainOf(from)), CreatedAt: now, Recipients: addressList{strings.ToLower(m.To)},
			Shared: shares[keys[i]]}
		a.add(e.insertArgs(ClassMarketing))
		out = append(out, id)
		refs = append(refs, jobs.EmailRef{EmailID: id, WorkspaceID: workspaceID})
	}
	writeAccepted(tx, &a)
	if len(refs) > 0 {
		tx.AddJob(jobs.MarketingBatchArgs{Emails: refs})
		n := len(refs)
		tx.AfterCommit(func() { s.meter.Email(mailmetrics.Accepted, ClassMarketing, n) })
	}
	return out, nil
}
