package delivery

import (
	"context"
	"errors"
	"net/textproto"
	"slices"
	"strings"

	"mailroom/internal/bounce"
	"mailroom/internal/events"
	"mailroom/internal/mailauth"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// HandleReport takes a message that arrived at a bounce (VERP) or feedback
// address. verpID is the email id of the signed return path it was sent
// to (smtpin refuses the others), "" for the feedback address; from is
// the client that handed it over. A delivery status notification at a
// return path becomes email.bounced for each permanently failed recipient
// it names that the email went to (suppressing the address only for
// recipient-level causes, outbound.Suppresses). An abuse report from a
// trusted source (FeedbackSources) becomes email.complained, and a
// suppression, for the recipient it names. Anything else (a DSN at the
// feedback address, an untrusted report, auto-replies, delay notices,
// reports about mail Mailroom did not send) is accepted and ignored, with
// a log line that says why, so its sender learns nothing: the error return
// is only for failures worth a 4xx (the database), so the reporting server
// tries again later.
func (s *Service) HandleReport(ctx context.Context, verpID string, from mailauth.Sender, raw []byte) error {
	switch bounce.Detect(raw) {
	case bounce.KindDSN:
		if verpID == "" {
			s.ignore("dsn", "not sent to a return path", "ip", from.IP.String())
			return nil
		}
		d, err := bounce.ParseDSN(raw)
		if err != nil {
			s.ignore("dsn", "unreadable", "err", err)
			return nil
		}
		return s.handleDSN(ctx, verpID, d)
	case bounce.KindARF:
		a, err := bounce.ParseARF(raw)
		if err != nil {
			s.ignore("arf", "unreadable", "err", err)
			return nil
		}
		return s.handleARF(ctx, verpID, from, raw, a)
	}
	return nil
}

// ignore logs a report that changes nothing, and counts it by kind and
// reason (a short fixed phrase).
func (s *Service) ignore(kind, reason string, args ...any) {
	s.reportsIgnored.WithLabelValues(kind, reason).Inc()
	s.log.Info("ignoring a report: "+reason, append([]any{"kind", kind}, args...)...)
}

// ignoreAfter is ignore from inside a write, once it commits: the group
// commit may run a write more than once (groupcommit.Optimistic).
func (s *Service) ignoreAfter(tx *store.Tx, kind, reason string, args ...any) {
	tx.AfterCommit(func() { s.ignore(kind, reason, args...) })
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
	// The signed return path names the email; what the DSN quotes
	// (Message-ID, headers) is the reporter's word and is not asked.
	e, err := loadEmail(ctx, s.db, verpID)
	if errors.Is(err, store.ErrNotFound) {
		s.ignore("dsn", "unknown email", "email_id", verpID)
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
			if i < 0 {
				s.ignoreAfter(tx, "dsn", "names no recipient of the email", "email_id", e.ID, "final_recipient", dr.FinalRecipient)
				continue
			}
			if rcpts[i].Status == RcptBounced || rcpts[i].Status == RcptSuppressed {
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
		return writeRecipients(ctx, tx, e, status, rcpts, nil, "", now)
	})
}

func (s *Service) handleARF(ctx context.Context, verpID string, from mailauth.Sender, raw []byte, a *bounce.ARF) error {
	e, err := s.findEmail(ctx, []string{verpID, s.verpOf(a.OriginalMailFrom), s.quotedReturnPath(a.OriginalHeaders)}, a.OriginalMessageID)
	if errors.Is(err, store.ErrNotFound) {
		s.ignore("arf", "unknown email", "message_id", a.OriginalMessageID)
		return nil
	}
	if err != nil {
		return err
	}
	if a.FeedbackType == "not-spam" {
		return nil
	}
	// Believed only from a source that can be justified: anyone can write
	// a report quoting a Message-ID that a recipient saw.
	if ok, why := s.feedback.trusted(ctx, from, raw); !ok {
		s.ignore("arf", "untrusted source", "email_id", e.ID, "why", why, "ip", from.IP.String())
		return nil
	}
	now := s.clock.Now()
	return s.writes.Do(ctx, func(tx *store.Tx) error {
		_, rcpts, err := lockRecipients(ctx, tx, e)
		if err != nil {
			return err
		}
		who := complainers(rcpts, a.OriginalRcptTo)
		if len(who) == 0 {
			s.ignoreAfter(tx, "arf", "names no recipient the email reached", "email_id", e.ID, "original_rcpt_to", a.OriginalRcptTo)
			return nil
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
		return writeRecipients(ctx, tx, e, sending.StatusComplained, rcpts, nil, "", now)
	})
}

// complainers are the recipients a report is about: those its
// Original-Rcpt-To names; when it names none of the email's (providers
// redact the address), the email's only recipient, if it had one. Either
// way only a recipient the email reached. The quoted message's To is not
// asked: every recipient's copy quotes the same one, so it cannot say
// which of several complained.
func complainers(rcpts []Recipient, named []string) []int {
	var who []int
	for _, to := range named {
		if i := match(rcpts, to); i >= 0 && !slices.Contains(who, i) {
			who = append(who, i)
		}
	}
	if len(who) == 0 && len(rcpts) == 1 {
		who = []int{0}
	}
	return slices.DeleteFunc(who, func(i int) bool {
		return rcpts[i].Status != RcptDelivered && rcpts[i].Status != RcptComplained
	})
}

// match finds the recipient a report names, -1 when it names none of the
// email's: a report is never about an address the email did not go to.
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
	return -1
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
