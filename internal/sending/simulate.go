package sending

import (
	"context"
	"database/sql"
	"errors"
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

// SimulateArgs asks the simulator to play out a test-mode email (every
// recipient a reserved test address). It never touches the outbound path.
type SimulateArgs struct {
	EmailID     string `json:"email_id"`
	WorkspaceID string `json:"workspace_id"`
}

// Kind names the job in the queue.
func (SimulateArgs) Kind() string { return "sending.simulate" }

// SimulateWorker runs SimulateArgs.
type SimulateWorker struct {
	river.WorkerDefaults[SimulateArgs]
	S *Service
}

// Work plays out the email.
func (w *SimulateWorker) Work(ctx context.Context, job *river.Job[SimulateArgs]) error {
	return w.S.simulate(ctx, job.Args.WorkspaceID, job.Args.EmailID)
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

// outcomeOf decides what a test-mode email simulates. With several test
// recipients the strongest outcome wins, in the order suppressed, bounced,
// complained, delivered (one email has one status).
func (s *Service) outcomeOf(recipients []string) string {
	rank := map[string]int{TestDelivered: 0, TestComplained: 1, TestBounced: 2, TestSuppressed: 3}
	best := TestDelivered
	for _, r := range recipients {
		if kind, _, ok := ClassifyTestAddress(r, s.serviceDomain); ok && rank[kind] > rank[best] {
			best = kind
		}
	}
	return best
}

func (s *Service) simulate(ctx context.Context, ws, id string) error {
	return s.writer.do(ctx, func(ctx context.Context, tx *store.Tx) error {
		e, err := s.lockRow(ctx, tx, ws, id)
		if err != nil || e == nil {
			return err
		}
		if e.Status != StatusQueued && e.Status != StatusSending {
			return nil // cancelled, or already played out by an earlier attempt
		}
		now := s.clock.Now().UTC()
		raise := func(kind string, data map[string]any) error {
			_, err := events.Raise(ctx, tx, events.Event{WorkspaceID: ws, EmailID: id, Type: kind, CreatedAt: now, Data: data})
			return err
		}
		setStatus := func(status, lastError string) error {
			_, err := tx.Exec(ctx, `UPDATE emails SET status = ?, last_error = ?, updated_at = ? WHERE id = ? AND status IN ('queued', 'sending')`,
				status, lastError, store.Millis(now), id)
			return err
		}
		switch s.outcomeOf(e.Recipients) {
		case TestSuppressed:
			// What a send to an address on the suppression list does when
			// its time comes: refused before any server sees it.
			if err := setStatus(StatusFailed, "recipient_suppressed: simulated suppression list entry"); err != nil {
				return err
			}
			return raise(events.EmailBounced, suppressedBounce(e))
		case TestBounced:
			if err := setStatus(StatusBounced, diagBounce); err != nil {
				return err
			}
			if err := raise(events.EmailSent, e.eventData()); err != nil {
				return err
			}
			d := e.eventData()
			d["bounce_type"] = "hard"
			d["bounce_subtype"] = "mailbox_unavailable"
			d["diagnostic"] = diagBounce
			return raise(events.EmailBounced, d)
		default: // delivered, complained
			if err := setStatus(StatusDelivered, ""); err != nil {
				return err
			}
			if err := raise(events.EmailSent, e.eventData()); err != nil {
				return err
			}
			if err := raise(events.EmailDelivered, e.eventData()); err != nil {
				return err
			}
			if s.outcomeOf(e.Recipients) == TestComplained {
				at := now.Add(ComplaintDelay)
				tx.AddJob(river.InsertManyParams{Args: ComplainArgs{EmailID: id, WorkspaceID: ws}, InsertOpts: &river.InsertOpts{ScheduledAt: at}})
			}
			return nil
		}
	})
}

func (s *Service) complain(ctx context.Context, ws, id string) error {
	return s.writer.do(ctx, func(ctx context.Context, tx *store.Tx) error {
		e, err := s.lockRow(ctx, tx, ws, id)
		if err != nil || e == nil {
			return err
		}
		now := s.clock.Now().UTC()
		res, err := tx.Exec(ctx, `UPDATE emails SET status = 'complained', updated_at = ? WHERE id = ? AND status = 'delivered'`, store.Millis(now), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
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
	e, err := scanSummary(tx.QueryRow(ctx, `SELECT `+summaryColumns+` FROM emails e WHERE e.workspace_id = ? AND e.id = ?`, ws, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return e, err
}
