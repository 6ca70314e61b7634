package inbound

import (
	"context"
	"errors"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

var errBookingNotFound = apierr.NotFound("scheduled message")

// Booking is a receive-side scheduled send: POST /v1/messages with send_at.
type Booking struct {
	ScheduledID string // the sending service's email id
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
	return Booking{ScheduledID: b.EmailID, MailboxID: b.MailboxID, Mailbox: c.Mailbox, ThreadID: b.ThreadID, Status: b.Status,
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
	b, err := getBooking(ctx, s.db, rd.WorkspaceID, mbx, id)
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
