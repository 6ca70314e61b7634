package sending

import (
	"context"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/policy"
	"mailroom/internal/store"
)

// policySend is what the policy area needs to know about a send; booking
// says a scheduled send is being booked (checked, counted when it goes).
func policySend(ws, from string, e *emailRow, booking bool, now time.Time) policy.Send {
	m := policy.Send{WorkspaceID: ws, From: strings.ToLower(from), Recipients: e.Recipients, HTML: e.HTML, Text: e.Text,
		Test: e.TestMode, At: now, Booking: booking}
	if booking && e.ScheduledAt != nil {
		m.At = *e.ScheduledAt
	}
	for k := range e.Headers {
		if strings.EqualFold(k, "List-Unsubscribe") {
			m.Marketing = true
		}
	}
	return m
}

// admitDue asks the policy about a scheduled email whose time has come:
// quotas, caps and holds are checked (and counted) now, not at booking. A
// refused one fails with the refusal in last_error (refused true). The
// count is kept even if the email then turns out to have every recipient
// suppressed (docs/decisions.md, "Sending policy").
func (s *Service) admitDue(ctx context.Context, tx *store.Tx, ws string, e *emailRow, now time.Time) (refused bool, err error) {
	if s.pol == nil {
		return false, nil
	}
	m := policySend(ws, "", e, false, now)
	if a, perr := ParseAddress(e.From); perr == nil {
		m.From = strings.ToLower(a.Email)
	}
	m.Due = true
	if _, err = s.pol.Admit(ctx, m); err == nil {
		return false, nil
	}
	ae, ok := apierr.As(err)
	if !ok {
		return false, err
	}
	_, err = s.failDue(ctx, tx, ws, e, ae.Code+": "+ae.Message, now)
	return true, err
}
