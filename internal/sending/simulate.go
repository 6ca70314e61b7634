package sending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// ComplaintDelay is how long after delivery complained@ files its complaint
// (River promotes scheduled jobs every few seconds, so it lands a little
// later still).
const ComplaintDelay = 3 * time.Second

// Simulated outcomes of the test addresses.
const (
	diagBounce     = "550 5.1.1 simulated bounce: mailbox unavailable"
	diagSuppressed = "recipient is on the suppression list; not sent"
)

// EmailRef names one test-mode email and what it simulates (decided from
// its recipients at booking: a test address's or a scenario's kind, and
// the scenario's wait).
type EmailRef struct {
	EmailID     string        `json:"email_id"`
	WorkspaceID string        `json:"workspace_id"`
	Outcome     string        `json:"outcome"`
	Delay       time.Duration `json:"delay,omitempty"`
}

// ComplainArgs files complained@'s complaint a few seconds after delivery.
type ComplainArgs struct {
	EmailID     string `json:"email_id"`
	WorkspaceID string `json:"workspace_id"`
}

// Kind names the job in the queue.
func (ComplainArgs) Kind() string { return "sending.complain" }

// ComplainWorker runs ComplainArgs.
type ComplainWorker struct {
	river.WorkerDefaults[ComplainArgs]
	S *Service
}

// Work files the complaint.
func (w *ComplainWorker) Work(ctx context.Context, job *river.Job[ComplainArgs]) error {
	return w.S.complain(ctx, job.Args.WorkspaceID, job.Args.EmailID)
}

// outcomeRank orders the outcomes: with several test recipients the
// strongest wins (one email has one status and one story).
var outcomeRank = map[string]int{TestDelivered: 0, ScenarioOpened: 1, ScenarioClicked: 2, ScenarioAutoReply: 3,
	TestComplained: 4, ScenarioDeferred: 5, ScenarioSoftBounce: 6, TestBounced: 7, TestSuppressed: 8}

// outcomeOf decides what a test-mode email simulates and, for a scenario,
// how long its next step waits.
func outcomeOf(recipients []string, serviceDomain string) (string, time.Duration) {
	best, label := TestDelivered, ""
	for _, r := range recipients {
		if kind, l, ok := ClassifyTestAddress(r, serviceDomain); ok && outcomeRank[kind] > outcomeRank[best] {
			best, label = kind, l
		}
	}
	return best, scenarioDelay(best, label)
}

// simulatedStatus is the status and error a test address plays out at
// once: final for the spec's four, sending while a deferral waits.
func simulatedStatus(outcome string, delay time.Duration) (status EmailStatus, lastError string) {
	switch outcome {
	case TestSuppressed:
		return StatusFailed, "recipient_suppressed: simulated suppression list entry"
	case TestBounced:
		return StatusBounced, diagBounce
	case ScenarioSoftBounce, ScenarioDeferred:
		return StatusSending, deferDiag(outcome, delay)
	}
	return StatusDelivered, ""
}

// deferDiag is the temporary failure a deferring scenario reports.
func deferDiag(outcome string, delay time.Duration) string {
	if outcome == ScenarioSoftBounce {
		return "452 4.2.2 simulated soft bounce: mailbox full, try again in " + delay.String()
	}
	return "451 4.7.1 simulated deferral: try again in " + delay.String()
}

// simulateOne plays out a test-mode email that is already stored as queued
// (a promoted booking): it moves the status and raises the events.
func (s *Service) simulateOne(ctx context.Context, tx *store.Tx, r EmailRef) error {
	now := s.clock.Now().UTC()
	status, lastError := simulatedStatus(r.Outcome, r.Delay)
	// One statement moves the status (only from queued or sending: a
	// cancelled email, or one an earlier attempt played out, is left alone)
	// and returns what the events carry.
	from, to, subject, tags, err := endSimulated(ctx, tx, r.WorkspaceID, r.EmailID, status, lastError, now)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("simulating %s: %w", r.EmailID, err)
	}
	base := map[string]any{"email_id": r.EmailID, "from": from, "to": json.RawMessage(to), "subject": subject, "tags": json.RawMessage(tags), "test_mode": true}
	return s.raiseSimulated(ctx, tx, r, func() map[string]any { return base }, nil, now)
}

// raiseSimulated raises the events a test address produces, in the spec's
// order: email.sent (2) then email.delivered or email.bounced (3); the
// complaint of complained@ follows a few seconds later (ComplainArgs), and
// a scenario's later steps are scheduled jobs (ScenarioArgs).
// base builds the data every event carries; baseJSON, when not nil, is
// that data encoded, and the events that carry it alone go out as it
// without base being built.
func (s *Service) raiseSimulated(ctx context.Context, tx *store.Tx, r EmailRef, base func() map[string]any, baseJSON []byte, now time.Time) error {
	// raise raises kind with base plus extra (key, value pairs).
	raise := func(kind string, extra ...any) error {
		ev := events.Event{WorkspaceID: r.WorkspaceID, EmailID: r.EmailID, Type: kind, CreatedAt: now}
		if len(extra) == 0 && baseJSON != nil {
			ev.RawData = baseJSON
		} else {
			b := base()
			ev.Data = make(map[string]any, len(b)+len(extra)/2)
			for k, v := range b {
				ev.Data[k] = v
			}
			for i := 0; i+1 < len(extra); i += 2 {
				ev.Data[extra[i].(string)] = extra[i+1]
			}
		}
		_, err := events.Raise(ctx, tx, ev)
		return err
	}
	switch r.Outcome {
	case ScenarioSoftBounce, ScenarioDeferred:
		// As the delivery engine does on a 4xx: a timeline-only deferral,
		// then email.sent and email.delivered when the retry succeeds.
		if err := raise(events.EmailDeferred, "diagnostic", deferDiag(r.Outcome, r.Delay)); err != nil {
			return err
		}
		s.scheduleStep(tx, r, stepDeliver, now)
		return nil
	case TestSuppressed:
		// What a send to an address on the suppression list does when its
		// time comes: refused before any server sees it, no email.sent.
		return raise(events.EmailBounced, "bounce_type", "hard", "bounce_subtype", "suppressed", "diagnostic", diagSuppressed)
	case TestBounced:
		if err := raise(events.EmailSent); err != nil {
			return err
		}
		return raise(events.EmailBounced, "bounce_type", "hard", "bounce_subtype", "mailbox_unavailable", "diagnostic", diagBounce)
	default: // delivered, complained
		if err := raise(events.EmailSent); err != nil {
			return err
		}
		if err := raise(events.EmailDelivered); err != nil {
			return err
		}
		switch r.Outcome {
		case TestComplained:
			delay := r.Delay
			if delay == 0 {
				delay = ComplaintDelay
			}
			tx.AddJob(river.InsertManyParams{Args: ComplainArgs{EmailID: r.EmailID, WorkspaceID: r.WorkspaceID},
				InsertOpts: &river.InsertOpts{ScheduledAt: now.Add(delay)}})
		case ScenarioAutoReply:
			s.scheduleStep(tx, r, stepAutoReply, now)
		case ScenarioOpened, ScenarioClicked:
			s.scheduleStep(tx, r, stepEngage, now)
		}
		return nil
	}
}

func (s *Service) complain(ctx context.Context, ws, id string) error {
	return s.writer.do(ctx, func(ctx context.Context, tx *store.Tx, _ *acceptBatch) error {
		e, err := s.lockRow(ctx, tx, ws, id)
		if err != nil || e == nil {
			return err
		}
		now := s.clock.Now().UTC()
		complained, err := markComplained(ctx, tx, id, now)
		if err != nil {
			return err
		}
		if !complained {
			return nil // already complained
		}
		for _, r := range e.Recipients {
			if kind, _, ok := ClassifyTestAddress(r, s.serviceDomain); ok && kind == TestComplained {
				if _, err := suppressions.AddTx(ctx, tx, ws, r, suppressions.ReasonComplaint, id, now); err != nil {
					return err
				}
			}
		}
		d := e.eventData()
		d["feedback_type"] = "abuse"
		_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: ws, EmailID: id, Type: events.EmailComplained, CreatedAt: now, Data: d})
		return err
	})
}

// lockRow reads an email's summary inside tx; nil when it is gone.
func (s *Service) lockRow(ctx context.Context, tx *store.Tx, ws, id string) (*emailRow, error) {
	e, err := readRow(ctx, tx, Caller{WorkspaceID: ws}, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return e, err
}
