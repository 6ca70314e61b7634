package sending

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// Scheduled is the answer to a reschedule.
type Scheduled struct {
	ID          string
	Status      EmailStatus
	ScheduledAt time.Time
}

// ScheduleChange is a scheduled email leaving or moving in its booking:
// rescheduled (Status scheduled, the new ScheduledAt), cancelled, queued
// (its time came and it is on its way) or failed (refused when due).
type ScheduleChange struct {
	WorkspaceID string
	EmailID     string
	Status      EmailStatus
	ScheduledAt time.Time
	At          time.Time
}

// ScheduleWatcher hears each ScheduleChange inside the transaction that
// makes it (inbound keeps its receive-side bookings with it); an error rolls
// the change back.
type ScheduleWatcher func(ctx context.Context, tx *store.Tx, ch ScheduleChange) error

// SetScheduleWatcher installs w (wired once, before the node serves).
func (s *Service) SetScheduleWatcher(w ScheduleWatcher) { s.watch = w }

func (s *Service) scheduleChanged(ctx context.Context, tx *store.Tx, ws, id string, status EmailStatus, at, now time.Time) error {
	if s.watch == nil {
		return nil
	}
	return s.watch(ctx, tx, ScheduleChange{WorkspaceID: ws, EmailID: id, Status: status, ScheduledAt: at, At: now})
}

// failDue fails a scheduled email refused when due (suppressed, opted out,
// over a limit) and tells the watcher; it answers whether the email was
// still scheduled.
func (s *Service) failDue(ctx context.Context, tx *store.Tx, ws string, e *emailRow, reason string, now time.Time) (bool, error) {
	failed, err := failScheduled(ctx, tx, e.ID, reason, now)
	if err != nil || !failed {
		return false, err
	}
	return true, s.scheduleChanged(ctx, tx, ws, e.ID, StatusFailed, *e.ScheduledAt, now)
}

// Reschedule moves a scheduled email to a new send_at (same parse and
// limits as a send). Only an email still waiting can move: one that has
// started on its way answers too_late_to_reschedule.
func (s *Service) Reschedule(ctx context.Context, c Caller, id, sendAt string) (*Scheduled, error) {
	now := s.clock.Now().UTC()
	at, err := ParseSendAt(sendAt, now)
	if err != nil {
		return nil, err
	}
	at = at.UTC()
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		e, err := s.lockScheduled(ctx, tx, c, id)
		if err != nil {
			return err
		}
		if e.Status != StatusScheduled {
			return apierr.Conflict("too_late_to_reschedule", "The email is already %s; it can no longer be rescheduled.", e.Status)
		}
		moved, err := setScheduledAt(ctx, tx, c.WorkspaceID, id, at, now)
		if err != nil {
			return err
		}
		if !moved {
			return apierr.Conflict("too_late_to_reschedule", "The email has started on its way; it can no longer be rescheduled.")
		}
		if err := s.scheduleChanged(ctx, tx, c.WorkspaceID, id, StatusScheduled, at, now); err != nil {
			return err
		}
		data := e.eventData()
		data["scheduled_at"] = at.Format(time.RFC3339)
		_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: c.WorkspaceID, EmailID: id, Type: events.EmailRescheduled, CreatedAt: now, Data: data})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Scheduled{ID: id, Status: StatusScheduled, ScheduledAt: at}, nil
}

// Cancel stops a scheduled email. Cancelling one already cancelled answers
// the same success; one that has started on its way answers
// too_late_to_cancel, with its current status in status.
func (s *Service) Cancel(ctx context.Context, c Caller, id string) (status EmailStatus, err error) {
	now := s.clock.Now().UTC()
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		e, err := s.lockScheduled(ctx, tx, c, id)
		if err != nil {
			return err
		}
		status = e.Status
		if e.Status == StatusCancelled {
			return nil
		}
		if e.Status != StatusScheduled {
			return apierr.Conflict("too_late_to_cancel", "The email is already %s; it can no longer be cancelled.", e.Status)
		}
		cancelled, err := cancelScheduled(ctx, tx, c.WorkspaceID, id, now)
		if err != nil {
			return err
		}
		if !cancelled {
			return apierr.Conflict("too_late_to_cancel", "The email has started on its way; it can no longer be cancelled.")
		}
		status = StatusCancelled
		if err := s.scheduleChanged(ctx, tx, c.WorkspaceID, id, StatusCancelled, *e.ScheduledAt, now); err != nil {
			return err
		}
		_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: c.WorkspaceID, EmailID: id, Type: events.EmailCancelled, CreatedAt: now, Data: e.eventData()})
		return err
	})
	return status, err
}

// lockScheduled reads an email that was booked with send_at. Emails that
// were never scheduled answer not_found, as the spec's "no scheduled email
// with that id". A booking belongs to the workspace, not to the key that
// made it: any mail:send key of the workspace may move or cancel it (a key
// bound to a mailbox still reaches only its mailbox's).
func (s *Service) lockScheduled(ctx context.Context, tx *store.Tx, c Caller, id string) (*emailRow, error) {
	c.OwnOnly = false
	e, err := readRow(ctx, tx, c, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("scheduled email")
	}
	if err != nil {
		return nil, err
	}
	if e.ScheduledAt == nil {
		return nil, apierr.NotFound("scheduled email")
	}
	return e, nil
}

// PromoteEvery is how often each node looks for scheduled emails whose time
// has come. Every node runs the pass (promotion is a conditional UPDATE, so
// nodes never both take one email); a River periodic job would run on the
// leader only and wait for River's scheduler, which made sends seconds late.
const PromoteEvery = 250 * time.Millisecond

// promoteLoop runs PromoteDue every PromoteEvery until stop closes.
func (s *Service) promoteLoop(ctx context.Context, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(PromoteEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if _, err := s.PromoteDue(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("promoting scheduled emails", "err", err)
			}
		}
	}
}

// promoteChunk bounds one promotion transaction.
const promoteChunk = 500

// PromoteDue moves every scheduled email whose time has come to queued and
// enqueues its work job, in one transaction per chunk. The topic, the
// policy and suppression are checked again now (topicDue, admitDue): when
// every real recipient is suppressed the email fails with email.bounced
// (bounce_subtype "suppressed") and nothing is sent. It returns how many
// emails it handled.
func (s *Service) PromoteDue(ctx context.Context) (int, error) {
	total := 0
	for {
		now := s.clock.Now().UTC()
		list, err := dueScheduled(ctx, s.db, now, promoteChunk)
		if err != nil {
			return total, err
		}
		if len(list) == 0 {
			return total, nil
		}
		err = s.writer.do(ctx, func(ctx context.Context, tx *store.Tx, a *acceptBatch) error {
			for _, d := range list {
				if err := s.promoteOne(ctx, tx, a, d.ws, d.id, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += len(list)
		if len(list) < promoteChunk {
			return total, nil
		}
	}
}

func (s *Service) promoteOne(ctx context.Context, tx *store.Tx, a *acceptBatch, ws, id string, now time.Time) error {
	e, err := loadFull(ctx, tx, Caller{WorkspaceID: ws}, id)
	if err != nil {
		return err
	}
	if e.Status != StatusScheduled {
		return nil
	}
	if refused, err := s.topicDue(ctx, tx, ws, e, now); err != nil || refused {
		return err
	}
	if refused, err := s.admitDue(ctx, tx, ws, e, now); err != nil || refused {
		return err
	}
	if !e.TestMode {
		sup, err := suppressions.Suppressed(ctx, tx, ws, e.Recipients)
		if err != nil {
			return err
		}
		if len(sup) == len(e.Recipients) && len(sup) > 0 {
			failed, err := s.failDue(ctx, tx, ws, e, "recipient_suppressed: "+strings.Join(slices.Sorted(maps.Keys(sup)), ", ")+" on the suppression list", now)
			if err != nil || !failed {
				return err
			}
			_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: ws, EmailID: id, Type: events.EmailBounced, CreatedAt: now, Data: suppressedBounce(e)})
			return err
		}
	}
	queued, err := queueScheduled(ctx, tx, id, now)
	if err != nil {
		return err
	}
	if !queued {
		return nil
	}
	if err := s.scheduleChanged(ctx, tx, ws, id, StatusQueued, *e.ScheduledAt, now); err != nil {
		return err
	}
	return s.enqueueWork(ctx, tx, a, e)
}

// suppressedBounce is the email.bounced data for a send stopped because its
// recipients are on the suppression list.
func suppressedBounce(e *emailRow) map[string]any {
	d := e.eventData()
	d["bounce_type"] = "hard"
	d["bounce_subtype"] = "suppressed"
	d["diagnostic"] = "recipient is on the suppression list; not sent"
	return d
}
