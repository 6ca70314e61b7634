package inbound

import (
	"context"
	"errors"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

var errBookingNotFound = apierr.NotFound("scheduled message")

// ScheduledID is the id a booking is handed out by, sch_ as the contract
// names it: its scheduled email's id with sch_ for em_. One id under two
// names needs no column to keep in step, and either finds the booking.
func ScheduledID(emailID string) string {
	if rest, ok := strings.CutPrefix(emailID, "em_"); ok {
		return "sch_" + rest
	}
	return emailID
}

// BookedEmail is the email id a scheduled id names: sch_x is em_x; any
// other id (an email id, as bookings were handed out before sch_) is itself.
func BookedEmail(id string) string {
	if rest, ok := strings.CutPrefix(id, "sch_"); ok && rest != "" {
		return "em_" + rest
	}
	return id
}

// IsScheduledID says whether id is in the sch_ form, which names a
// receive-side booking and nothing else.
func IsScheduledID(id string) bool { return strings.HasPrefix(id, "sch_") }

// Booking is a receive-side scheduled send: POST /v1/messages with send_at.
type Booking struct {
	ScheduledID string // sch_: ScheduledID(EmailID)
	EmailID     string // the sending service's email id
	MailboxID   string
	Mailbox     string // the mailbox's address, which it goes from
	ThreadID    string // the conversation it answers; "" for a new one
	Status      string // scheduled, queued (it went), cancelled or failed
	SendAt      time.Time
	To, Cc      []string
	Subject     string
	MessageID   string // the stored sent copy, once it went
	CreatedAt   time.Time
}

func (b *booking) out() Booking {
	c := b.Copy
	return Booking{ScheduledID: ScheduledID(b.EmailID), EmailID: b.EmailID, MailboxID: b.MailboxID, Mailbox: c.Mailbox, ThreadID: b.ThreadID, Status: b.Status,
		SendAt: b.SendAt, To: c.To, Cc: c.Cc, Subject: c.Subject, MessageID: b.MessageID, CreatedAt: b.CreatedAt}
}

// Bookings lists the receive-side sends still waiting, soonest first
// (limit+1 rows are asked by callers that page); a bound key sees its
// mailbox's only.
func (s *Service) Bookings(ctx context.Context, rd Reader, after *Position, limit int) ([]Booking, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	bs, err := listBookings(ctx, s.db, rd.WorkspaceID, mbx, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Booking, len(bs))
	for i, b := range bs {
		out[i] = b.out()
	}
	return out, nil
}

// Booking reads one receive-side send in the reader's reach; not_found
// when there is none (the id may still be a scheduled email of POST
// /v1/emails, which an unbound key may read at the same route).
func (s *Service) Booking(ctx context.Context, rd Reader, id string) (*Booking, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	b, err := getBooking(ctx, s.db, rd.WorkspaceID, mbx, BookedEmail(id))
	if err != nil {
		return nil, notFound(err, errBookingNotFound)
	}
	o := b.out()
	return &o, nil
}

// ScheduleChanged keeps a booking with its scheduled email (the sending
// service calls it inside the transaction of each change): a new time, a
// cancel or a refusal is noted; when the email goes, its sent copy is
// stored in the conversation it answers, as an immediate reply's is.
func (s *Service) ScheduleChanged(ctx context.Context, tx *store.Tx, ch sending.ScheduleChange) error {
	b, err := bookingFor(ctx, tx, ch.EmailID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // a POST /v1/emails send
	}
	if err != nil {
		return err
	}
	if ch.Status != sending.StatusQueued {
		return updateBooking(ctx, tx, b.EmailID, string(ch.Status), ch.ScheduledAt, "")
	}
	if b.MessageID != "" {
		return nil
	}
	msg := b.Copy
	msg.ReceivedAt = ch.At
	if err := s.storeSent(ctx, tx, msg, b.ThreadID); err != nil {
		return err
	}
	return updateBooking(ctx, tx, b.EmailID, string(ch.Status), ch.ScheduledAt, msg.ID)
}
