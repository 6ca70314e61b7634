package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"mailroom/internal/mailmetrics"
	"slices"
	"strconv"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// record writes one attempt's outcome in one transaction: the merged
// recipients, the email's status, the events and the suppressions. keep
// holds the signed message when recipients are still owed a retry.
//
// A write that fails is tried again, with backoff, for up to
// OutcomeRetryFor (issue #39): once a server has answered 250 the outcome
// must be kept, or the job runs again and sends the message twice. A full
// disk or a restarting database is the usual cause, and passes.
func (s *Service) record(e *email, changed []Recipient, keep []byte, tried []attemptRow, now time.Time) error {
	wait, deadline := 100*time.Millisecond, time.Now().Add(s.outcomeRetryFor)
	for try := 1; ; try++ {
		err := s.recordOnce(e, changed, keep, tried, now)
		if err == nil || errors.Is(err, errGone) {
			return err
		}
		if time.Now().Add(wait).After(deadline) {
			s.log.Error("giving up writing a delivery outcome; the job will run again and may send the message twice",
				"email_id", e.ID, "tries", try, "err", err)
			return err
		}
		s.log.Warn("writing a delivery outcome failed; trying again", "email_id", e.ID, "try", try, "in", wait.String(), "err", err)
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Second)
	}
}

// recordOnce is one try of record.
func (s *Service) recordOnce(e *email, changed []Recipient, keep []byte, tried []attemptRow, now time.Time) error {
	ctx := context.Background()
	return s.writes.Do(ctx, func(tx *store.Tx) error {
		var delivered, deferred []string
		lastError := ""
		deferDiag := ""
		for _, r := range changed {
			switch r.Status {
			case RcptDelivered:
				delivered = append(delivered, r.Email)
			case RcptDeferred:
				deferred = append(deferred, r.Email)
				deferDiag = diagnostic(r)
				lastError = deferDiag
			case RcptSuppressed:
				lastError = r.Message
			}
		}
		for _, r := range changed {
			if r.Status == RcptBounced {
				lastError = diagnostic(r)
			}
		}
		final, err := writeOutcome(ctx, tx, e, changed, tried, lastError, now)
		if err != nil {
			return err
		}
		if len(delivered) > 0 {
			// One transaction answered 2xx: the message is sent and, as far
			// as Mailroom can ever know, delivered (see docs/decisions.md).
			for _, kind := range []string{events.EmailSent, events.EmailDelivered} {
				ev := e.event(kind, now, e.eventData(delivered))
				ev.DataIsEmail = slices.Equal(delivered, e.To) // the email row holds it all: the event stores none
				if _, err := events.Raise(ctx, tx, ev); err != nil {
					return err
				}
			}
		}
		for _, r := range changed {
			if r.Status != RcptBounced {
				continue
			}
			if err := s.bounce(ctx, tx, e, r, now); err != nil {
				return err
			}
		}
		if len(deferred) > 0 {
			d := e.eventData(deferred)
			d["diagnostic"] = deferDiag
			if _, err := events.Raise(ctx, tx, e.event(events.EmailDeferred, now, d)); err != nil {
				return err
			}
		}
		if err := writeAttempts(ctx, tx, e, tried); err != nil {
			return err
		}
		if final == sending.StatusSending && keep != nil {
			return keepSigned(ctx, tx, e.ID, e.WorkspaceID, keep, now)
		}
		if final != sending.StatusSending && e.mayKeep {
			return dropSigned(ctx, tx, e.ID)
		}
		return nil
	})
}

// writeOutcome merges changed into the email's stored recipients and
// writes them with the email's status, which it returns: in one statement
// while the row still holds the recipients and claim e was read with
// (sending.WriteOutcomeIf), else after reading the row again under lock
// (lockRecipients: a report or another attempt changed it meanwhile).
// errGone: another run finished the email, or took it over.
func writeOutcome(ctx context.Context, tx *store.Tx, e *email, changed []Recipient, tried []attemptRow, lastError string, now time.Time) (sending.EmailStatus, error) {
	if e.read {
		rcpts := merge(e.recipients(), changed)
		final := statusOf(rcpts)
		stored, err := storedRecipients(rcpts, tried, e.To)
		if err != nil {
			return "", err
		}
		ok, err := sending.WriteOutcomeIf(ctx, tx, e.ID, final, stored, lastError, now, e.readRecipients, e.claim)
		if err != nil || ok {
			return final, err
		}
	}
	status, rcpts, err := lockRecipients(ctx, tx, e)
	if err != nil {
		return "", err
	}
	if status != sending.StatusQueued && status != sending.StatusSending {
		// Another run (after a rescue) already finished the email.
		return "", errGone
	}
	rcpts = merge(rcpts, changed)
	final := statusOf(rcpts)
	return final, writeRecipients(ctx, tx, e, final, rcpts, tried, lastError, now)
}

// statusOf is the email's status with these outcomes: final, or sending
// while a recipient is owed.
func statusOf(rcpts []Recipient) sending.EmailStatus {
	if final := finalStatus(rcpts); final != "" {
		return final
	}
	return sending.StatusSending
}

// bounce raises email.bounced for one recipient and suppresses the address
// only when the failure is about the recipient itself
// (outbound.Suppresses): a policy refusal, a refusal at MAIL FROM or DATA
// or a connection failure bounces the email without suppressing.
func (s *Service) bounce(ctx context.Context, tx *store.Tx, e *email, r Recipient, now time.Time) error {
	typ, sub := outbound.Classify(r.Code, r.Enhanced, r.Message)
	switch {
	case r.temporary:
		// Temporary failures that ran out of retries.
		typ = outbound.BounceSoft
	case r.Code == 0:
		// No server answered, and the transport called it permanent (no
		// such domain, null MX).
		typ = outbound.BounceHard
	}
	d := e.eventData([]string{r.Email})
	d["bounce_type"], d["bounce_subtype"], d["diagnostic"] = typ, sub, diagnostic(r)
	if _, err := events.Raise(ctx, tx, e.event(events.EmailBounced, now, d)); err != nil {
		return err
	}
	s.noteOutcome(tx, e.WorkspaceID, 1, 0)
	stage := r.Stage
	if stage == "" && r.Code == 0 {
		stage = outbound.StageConnect
	} else if stage == "" {
		stage = outbound.StageRcpt // stored before stages were recorded
	}
	if !outbound.Suppresses(stage, r.Code, r.Enhanced, r.Message, r.temporary) {
		return nil
	}
	_, err := suppressions.AddTx(ctx, tx, e.WorkspaceID, r.Email, suppressions.ReasonBounce, e.ID, now)
	return err
}

// fail ends an email that can never go out (the message cannot be built,
// the domain lost its key): status failed, the reason in last_error.
func (s *Service) fail(e *email, reason string, now time.Time) error {
	ctx := context.Background()
	return s.writes.Do(ctx, func(tx *store.Tx) error {
		if err := sending.FailUnsent(ctx, tx, e.ID, reason, now); err != nil {
			return err
		}
		tx.AfterCommit(func() {
			s.meter.Email(mailmetrics.Failed, e.class(), 1)
			s.log.Error("email failed", "email_id", e.ID, "reason", reason)
		})
		return dropSigned(ctx, tx, e.ID)
	})
}

// lockRecipients reads the email's status and recipients inside tx (locking
// the row on PostgreSQL), so concurrent writers merge instead of
// overwriting each other.
func lockRecipients(ctx context.Context, tx *store.Tx, e *email) (sending.EmailStatus, []Recipient, error) {
	status, raw, claim, err := sending.LockOutcome(ctx, tx, e.ID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, errGone // deleted meanwhile
	}
	if err != nil {
		return "", nil, err
	}
	if e.claim != "" && claim != e.claim {
		// Another attempt took the email over (this node was given up):
		// its outcome is the one that counts.
		return "", nil, errGone
	}
	rcpts, err := decodeRecipients(ctx, tx, e.ID, raw)
	if err != nil {
		return "", nil, err
	}
	if len(rcpts) == 0 {
		fresh := &email{To: e.To, Cc: e.Cc, Bcc: e.Bcc}
		rcpts = fresh.recipients()
	}
	return status, rcpts, nil
}

// writeRecipients stores the email's status and its recipients' outcomes,
// compacted (compactRecipients) when the attempts tried in this
// transaction rebuild them.
func writeRecipients(ctx context.Context, tx *store.Tx, e *email, status sending.EmailStatus, rcpts []Recipient, tried []attemptRow, lastError string, now time.Time) error {
	stored, err := storedRecipients(rcpts, tried, e.To)
	if err != nil {
		return err
	}
	return sending.WriteOutcome(ctx, tx, e.ID, status, stored, lastError, now)
}

// storedRecipients is the recipients array as stored: compacted when the
// attempts tried in this transaction rebuild it (compactRecipients; to, the
// email's To addresses, may then stand for the delivered ones).
func storedRecipients(rcpts []Recipient, tried []attemptRow, to []string) (string, error) {
	if c, ok := compactRecipients(rcpts, tried, to); ok {
		return c, nil
	}
	b, err := json.Marshal(rcpts)
	return string(b), err
}

// merge replaces the entries of rcpts named in changed (by normalized
// address) and appends the ones it lacks.
func merge(rcpts, changed []Recipient) []Recipient {
	for _, c := range changed {
		found := false
		for i := range rcpts {
			if suppressions.Normalize(rcpts[i].Email) == suppressions.Normalize(c.Email) {
				rcpts[i] = c
				found = true
				break
			}
		}
		if !found {
			rcpts = append(rcpts, c)
		}
	}
	return rcpts
}

// finalStatus is the email's status once no recipient is owed an attempt:
// delivered when any recipient took it (complained counts: it was
// delivered), else bounced when any bounced, else failed (all suppressed).
// It is "" while a recipient is still owed.
func finalStatus(rcpts []Recipient) sending.EmailStatus {
	var delivered, bounced, complained bool
	for _, r := range rcpts {
		switch r.Status {
		case RcptDelivered:
			delivered = true
		case RcptComplained:
			complained = true
		case RcptBounced:
			bounced = true
		case RcptSuppressed:
		default:
			return ""
		}
	}
	switch {
	case complained:
		return sending.StatusComplained
	case delivered:
		return sending.StatusDelivered
	case bounced:
		return sending.StatusBounced
	}
	return sending.StatusFailed
}

// diagnostic is the remote server's text as the event reports it: "550
// 5.1.1 No such user here", or the connection failure.
func diagnostic(r Recipient) string {
	out := r.Message
	if r.Enhanced != "" {
		out = r.Enhanced + " " + out
	}
	if r.Code != 0 {
		out = strconv.Itoa(r.Code) + " " + out
	}
	return out
}
