package webhooks

import (
	"context"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/store"
)

// Bounds of one bulk replay (POST /v1/webhooks/{id}/replay).
const (
	// MaxReplay is how many events one bulk replay queues at most; the
	// answer says where to go on from (NextSince).
	MaxReplay = 1000
	// maxReplayScan is how many log rows (every workspace's) one bulk
	// replay looks at, at most.
	maxReplayScan = 200_000
)

// ReplayFilter picks the past events a bulk replay queues again.
type ReplayFilter struct {
	Since   time.Time // zero: from the log's oldest
	Until   time.Time // zero: up to now; exclusive
	Types   []string  // nil: the endpoint's subscription
	EmailID string    // "": every email's (and the events of none)
}

// BulkReplay is what a bulk replay did.
type BulkReplay struct {
	Matched int  // events that passed the filter
	Queued  int  // delivery rows written (an event already waiting for the endpoint is not queued twice)
	Held    bool // the endpoint is disabled: the rows wait for it, as its other deliveries do
	More    bool // more events may match: replay again from NextSince
	// NextSince is where a further replay goes on from when More.
	NextSince time.Time
}

// ReplayRange queues the matching past events of the log for webhookID
// through the normal delivery machinery: one delivery row each, retried
// along the curve like any other, with the stored body and a fresh
// signature. An endpoint scoped to a mailbox gets only its mailbox's
// events, as it would have; a caller bound to a mailbox (boundTo) finds only
// its own endpoints.
func (s *Service) ReplayRange(ctx context.Context, workspaceID, boundTo, webhookID string, f ReplayFilter) (*BulkReplay, error) {
	e, err := s.Get(ctx, workspaceID, boundTo, webhookID)
	if err != nil {
		return nil, err
	}
	scope := StreamScope{WorkspaceID: workspaceID, Mailbox: e.MailboxID, Types: f.Types}
	if len(scope.Types) == 0 {
		scope.Types = e.Events
	}
	var picked []StreamEvent
	out := &BulkReplay{Held: !e.Active}
	if f.EmailID != "" {
		picked, err = s.pickOfEmail(ctx, scope, f)
	} else {
		picked, out.More, out.NextSince, err = s.pickInLog(ctx, scope, f)
	}
	if err != nil {
		return nil, err
	}
	if len(picked) > MaxReplay {
		picked, out.More = picked[:MaxReplay], true
	}
	out.Matched = len(picked)
	if out.More && len(picked) > 0 {
		out.NextSince = picked[len(picked)-1].At
	}
	if out.Queued, err = s.queueReplay(ctx, e, picked); err != nil {
		return nil, err
	}
	s.kickPoolOnly()
	return out, nil
}

// keeps is whether the event falls in the filter's time range.
func (f ReplayFilter) keeps(ev StreamEvent) bool {
	return (f.Since.IsZero() || !ev.At.Before(f.Since)) && (f.Until.IsZero() || ev.At.Before(f.Until))
}

// pick appends the events of evs the filter keeps.
func (f ReplayFilter) pick(picked, evs []StreamEvent) []StreamEvent {
	for _, ev := range evs {
		if f.keeps(ev) {
			picked = append(picked, ev)
		}
	}
	return picked
}

// pickOfEmail is the replay of one email's events: at most MaxReplay+1,
// so that the caller sees there are more.
func (s *Service) pickOfEmail(ctx context.Context, scope StreamScope, f ReplayFilter) ([]StreamEvent, error) {
	rows, err := events.WebhookEventsOfEmail(ctx, s.db, scope.WorkspaceID, f.EmailID, MaxReplay+1)
	if err != nil {
		return nil, err
	}
	evs, err := s.visible(ctx, scope, rows)
	if err != nil {
		return nil, err
	}
	return f.pick(nil, evs), nil
}

// pickInLog walks the log between the filter's times, window by window,
// until it has more than MaxReplay events or has scanned maxReplayScan
// rows; cut then says so, and cutAt is where a further replay goes on
// from.
func (s *Service) pickInLog(ctx context.Context, scope StreamScope, f ReplayFilter) (picked []StreamEvent, cut bool, cutAt time.Time, err error) {
	cursor, end := int64(0), int64(0)
	if !f.Since.IsZero() {
		if cursor, err = events.SeqBefore(ctx, s.db, f.Since); err != nil {
			return nil, false, cutAt, err
		}
	}
	if f.Until.IsZero() {
		end, err = events.MaxSeq(ctx, s.db)
	} else {
		end, err = events.SeqBefore(ctx, s.db, f.Until)
	}
	if err != nil {
		return nil, false, cutAt, err
	}
	scanned := int64(0)
	var lastAt time.Time
	for cursor < end && len(picked) <= MaxReplay {
		if scanned >= maxReplayScan {
			return picked, true, lastAt, nil
		}
		upto := min(cursor+streamWindow, end)
		rows, err := events.WebhookEventsIn(ctx, s.db, scope.WorkspaceID, cursor, upto, StreamPage)
		if err != nil {
			return nil, false, cutAt, err
		}
		next := upto
		if len(rows) == StreamPage {
			next = rows[len(rows)-1].Seq
		}
		if len(rows) > 0 {
			lastAt = rows[len(rows)-1].At
		}
		evs, err := s.visible(ctx, scope, rows)
		if err != nil {
			return nil, false, cutAt, err
		}
		picked = f.pick(picked, evs)
		scanned += next - cursor
		cursor = next
	}
	return picked, false, cutAt, nil
}

// queueReplay writes one delivery row per picked event for endpoint e, in
// chunks of 100, held while e is disabled; it answers how many it wrote.
func (s *Service) queueReplay(ctx context.Context, e *Endpoint, picked []StreamEvent) (int, error) {
	held := 0
	if !e.Active {
		held = 1
	}
	nowMs := store.Millis(s.clock.Now())
	queued := 0
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		queued = 0
		for start := 0; start < len(picked); start += 100 {
			var args []any
			chunk := picked[start:min(start+100, len(picked))]
			for _, ev := range chunk {
				args = append(args, e.ID, e.WorkspaceID, ev.ID, ev.Cursor, store.Millis(ev.At), held, nowMs, nowMs)
			}
			n, err := queueDeliveries(ctx, tx, len(chunk), args)
			if err != nil {
				return err
			}
			queued += int(n)
		}
		if held == 1 {
			return trimHeld(ctx, tx, e.ID)
		}
		return nil
	})
	return queued, err
}
