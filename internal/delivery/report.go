package delivery

import (
	"context"
	"errors"
	"net/textproto"
	"strings"

	"mailroom/internal/bounce"
	"mailroom/internal/events"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// HandleReport takes a message that arrived at a bounce (VERP) or feedback
// address. verpID is the email id recovered from the VERP recipient, "" for
// the feedback address. A delivery status notification becomes
// email.bounced for each permanently failed recipient (suppressing the
// address only for recipient-level causes, outbound.Suppresses), an abuse
// report email.complained (which suppresses). Anything else (auto-replies,
// delay notices, reports about mail Mailroom did not send) is dropped: the
// error return is only for failures worth a 4xx (the database), so the
// reporting server tries again later.
func (s *Service) HandleReport(ctx context.Context, verpID string, raw []byte) error {
	switch bounce.Detect(raw) {
	case bounce.KindDSN:
		d, err := bounce.ParseDSN(raw)
		if err != nil {
			s.log.Info("dropping unreadable delivery status notification", "err", err)
			return nil
		}
		return s.handleDSN(ctx, verpID, d)
	case bounce.KindARF:
		a, err := bounce.ParseARF(raw)
		if err != nil {
			s.log.Info("dropping unreadable feedback report", "err", err)
			return nil
		}
		return s.handleARF(ctx, verpID, a)
	}
	return nil
}

// findEmail locates the reported email: by the VERP id, else by the id in a
// VERP return path quoted in the report, else by the returned Message-ID.
func (s *Service) findEmail(ctx context.Context, ids []string, messageID string) (*email, error) {
	for _, id := range ids {
		if id == "" {
			continue
		}
		e, err := loadEmail(ctx, s.db, id)
		if err == nil || !errors.Is(err, store.ErrNotFound) {
			return e, err
		}
	}
	messageID = strings.TrimSpace(messageID)
	if messageID == "" {
		return nil, store.ErrNotFound
	}
	if !strings.HasPrefix(messageID, "<") {
		messageID = "<" + messageID + ">"
	}
	id, ok := outbound.EmailIDOf(messageID)
	if !ok {
		return nil, store.ErrNotFound
	}
	e, err := loadEmail(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	if e.MessageID != messageID {
		return nil, store.ErrNotFound
	}
	return e, nil
}

// verpOf is the email id of a signed return path quoted in a report, ""
// when it is not one.
func (s *Service) verpOf(addr string) string {
	id, _ := s.verp.Parse(addr)
	return id
}

func (s *Service) quotedReturnPath(h textproto.MIMEHeader) string {
	if h == nil {
		return ""
	}
	return s.verpOf(h.Get("Return-Path"))
}

func (s *Service) handleDSN(ctx context.Context, verpID string, d *bounce.DSN) error {
	e, err := s.findEmail(ctx, []string{verpID, s.quotedReturnPath(d.OriginalHeaders)}, d.OriginalMessageID)
	if errors.Is(err, store.ErrNotFound) {
		s.log.Info("dropping a bounce for an unknown email", "verp", verpID, "message_id", d.OriginalMessageID)
		return nil
	}
	if err != nil {
		return err
	}
	now := s.clock.Now()
	return s.writes.Do(ctx, func(tx *store.Tx) error {
		status, rcpts, err := lockRecipients(ctx, tx, e)
		if err != nil {
			return err
		}
		changed := false
		for _, dr := range d.Recipients {
			if !dr.Failed() {
				continue // delayed, delivered, relayed: nothing to record
			}
			i := match(rcpts, dr.FinalRecipient, dr.OriginalRecipient)
			if i < 0 || rcpts[i].Status == RcptBounced || rcpts[i].Status == RcptSuppressed {
				continue
			}
			r := &rcpts[i]
			wasDelivered := r.Status == RcptDelivered || r.Status == RcptComplained
			r.Status, r.Code, r.Enhanced = RcptBounced, dr.SMTPCode(), dr.Status
			r.Message = dr.DiagnosticCode
			if r.Message == "" {
				r.Message = firstLine(d.HumanReadable)
			}
			typ, sub := outbound.Classify(r.Code, r.Enhanced, r.Message)
			if strings.HasPrefix(dr.Status, "5.") || dr.Action == "failed" && typ == outbound.BounceSoft && sub == outbound.SubtypeConnection {
				typ = outbound.BounceHard
			}
			data := e.eventData([]string{r.Email})
			data["bounce_type"], data["bounce_subtype"], data["diagnostic"] = typ, sub, r.Message
			ev := e.event(events.EmailBounced, now, data)
			ev.AfterDelivery = wasDelivered // counted as sent when it was delivered
			if _, err := events.Raise(ctx, tx, ev); err != nil {
				return err
			}
			s.noteOutcome(tx, e.WorkspaceID, 1, 0)
			if outbound.Suppresses(outbound.StageReport, r.Code, r.Enhanced, r.Message, typ != outbound.BounceHard) {
				if _, err := suppressions.AddTx(ctx, tx, e.WorkspaceID, r.Email, suppressions.ReasonBounce, e.ID, now); err != nil {
					return err
				}
			}
			changed = true
		}
		if !changed {
			return nil
		}
		// While a retry is still owed the worker settles the status.
		if status != sending.StatusQueued && status != sending.StatusSending {
			if f := finalStatus(rcpts); f != "" {
				status = f
			}
		}
		return writeRecipients(ctx, tx, e.ID, status, rcpts, "", now)
	})
}

func (s *Service) handleARF(ctx context.Context, verpID string, a *bounce.ARF) error {
	e, err := s.findEmail(ctx, []string{verpID, s.verpOf(a.OriginalMailFrom), s.quotedReturnPath(a.OriginalHeaders)}, a.OriginalMessageID)
	if errors.Is(err, store.ErrNotFound) {
		s.log.Info("dropping a complaint about an unknown email", "message_id", a.OriginalMessageID)
		return nil
	}
	if err != nil {
		return err
	}
	if a.FeedbackType == "not-spam" {
		return nil
	}
	now := s.clock.Now()
	return s.writes.Do(ctx, func(tx *store.Tx) error {
		_, rcpts, err := lockRecipients(ctx, tx, e)
		if err != nil {
			return err
		}
		// Providers usually redact the complaining address; then every
		// recipient the email reached is taken as the complainer.
		var who []int
		for _, to := range a.OriginalRcptTo {
			if i := match(rcpts, to, ""); i >= 0 {
				who = append(who, i)
			}
		}
		if len(who) == 0 {
			for i, r := range rcpts {
				if r.Status == RcptDelivered || r.Status == RcptComplained {
					who = append(who, i)
				}
			}
		}
		var addrs []string
		for _, i := range who {
			if rcpts[i].Status == RcptComplained {
				continue // a repeated report
			}
			rcpts[i].Status = RcptComplained
			addrs = append(addrs, rcpts[i].Email)
			if _, err := suppressions.AddTx(ctx, tx, e.WorkspaceID, rcpts[i].Email, suppressions.ReasonComplaint, e.ID, now); err != nil {
				return err
			}
		}
		if len(addrs) == 0 {
			return nil
		}
		data := e.eventData(addrs)
		data["feedback_type"] = a.FeedbackType
		if _, err := events.Raise(ctx, tx, e.event(events.EmailComplained, now, data)); err != nil {
			return err
		}
		s.noteOutcome(tx, e.WorkspaceID, 0, len(addrs))
		return writeRecipients(ctx, tx, e.ID, sending.StatusComplained, rcpts, "", now)
	})
}

// match finds the recipient a report names; a report about a
// single-recipient email names it whatever address (after forwarding) the
// report gives.
func match(rcpts []Recipient, addrs ...string) int {
	for _, a := range addrs {
		if a == "" {
			continue
		}
		for i, r := range rcpts {
			if suppressions.Normalize(r.Email) == suppressions.Normalize(a) {
				return i
			}
		}
	}
	if len(rcpts) == 1 {
		return 0
	}
	return -1
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
