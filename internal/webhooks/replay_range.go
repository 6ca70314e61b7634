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
	keep := func(ev StreamEvent) bool {
		return (f.Since.IsZero() || !ev.At.Before(f.Since)) && (f.Until.IsZero() || ev.At.Before(f.Until))
	}
	var picked []StreamEvent
	more := false
	var out0 time.Time // where a replay cut short by the scan bound goes on from
	if f.EmailID != "" {
		rows, err := events.WebhookEventsOfEmail(ctx, s.db, workspaceID, f.EmailID, MaxReplay+1)
		if err != nil {
			return nil, err
		}
		evs, err := s.visible(ctx, scope, rows)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			if keep(ev) {
				picked = append(picked, ev)
			}
		}
	} else {
		cursor, end := int64(0), int64(0)
		if !f.Since.IsZero() {
			if cursor, err = events.SeqBefore(ctx, s.db, f.Since); err != nil {
				return nil, err
			}
		}
		if f.Until.IsZero() {
			end, err = events.MaxSeq(ctx, s.db)
		} else {
			end, err = events.SeqBefore(ctx, s.db, f.Until)
		}
		if err != nil {
			return nil, err
		}
		scanned := int64(0)
		var lastAt time.Time
		for cursor < end && len(picked) <= MaxReplay {
			if scanned >= maxReplayScan {
				more, out0 = true, lastAt
				break
			}
			upto := min(cursor+streamWindow, end)
			rows, err := events.WebhookEventsIn(ctx, s.db, workspaceID, cursor, upto, StreamPage)
			if err != nil {
				return nil, err
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
				return nil, err
			}
			for _, ev := range evs {
				if keep(ev) {
					picked = append(picked, ev)
				}
			}
			scanned += next - cursor
			cursor = next
		}
	}
	out := &BulkReplay{Held: !e.Active, More: more, NextSince: out0}
	if len(picked) > MaxReplay {
		picked, out.More = picked[:MaxReplay], true
	}
	out.Matched = len(picked)
	if out.More && len(picked) > 0 {
		out.NextSince = picked[len(picked)-1].At
	}
	held := 0
	if !e.Active {
		held = 1
	}
	nowMs := store.Millis(s.clock.Now())
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		out.Queued = 0
		for start := 0; start < len(picked); start += 100 {
			var args []any
			chunk := picked[start:min(start+100, len(picked))]
			for _, ev := range chunk {
				args = append(args, e.ID, workspaceID, ev.ID, ev.Cursor, store.Millis(ev.At), held, nowMs, nowMs)
			}
			n, err := queueDeliveries(ctx, tx, len(chunk), args)
			if err != nil {
				return err
			}
			out.Queued += int(n)
		}
		if held == 1 {
			return trimHeld(ctx, tx, e.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.kickPoolOnly()
	return out, nil
}
