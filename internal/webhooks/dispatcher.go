package webhooks

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/store"
)

// dispatchLoop fans the event log out into delivery rows. It wakes when a
// transaction on this node raised a webhook event, on Kick, and every
// pollInterval so that events raised on other nodes are found too.
func (s *Service) dispatchLoop(ctx context.Context) {
	raised := s.db.Signals(events.SignalTopic)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	lastHousekeeping := time.Time{}
	for {
		for {
			n, err := s.fanOut(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Error("webhooks: fanning out events", "err", err)
				break
			}
			if n > 0 {
				s.kickPoolOnly()
			}
			if n < eventBatch {
				break
			}
		}
		if time.Since(lastHousekeeping) >= housekeepEvery {
			lastHousekeeping = time.Now()
			if err := s.housekeep(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("webhooks: housekeeping", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-raised:
		case <-s.kickDispatch:
		case <-tick.C:
		}
	}
}

func (s *Service) kickPoolOnly() {
	select {
	case s.kickPool <- struct{}{}:
	default:
	}
}

type subscriber struct {
	id      string
	events  []string
	active  bool
	mailbox string // "" when the endpoint is not scoped to a mailbox
}

// wants reports whether the endpoint takes the event: a mailbox-scoped
// endpoint takes received-mail events of its own mailbox only, and of the
// events without a mailbox only those MailboxScoped allows.
func (sub subscriber) wants(e events.Claimed) bool {
	if !slices.Contains(sub.events, e.Type) {
		return false
	}
	if sub.mailbox == "" {
		return true
	}
	if e.MailboxID != "" {
		return e.MailboxID == sub.mailbox
	}
	return MailboxScoped(e.Type)
}

// fanOut claims a batch of undispatched events and, in the same
// transaction, writes one delivery row per subscribed endpoint (held for a
// disabled one). It returns how many events it claimed.
func (s *Service) fanOut(ctx context.Context) (int, error) {
	var claimed int
	now := s.clock.Now()
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		claimed = 0
		evs, err := events.ClaimUndispatched(ctx, tx, eventBatch)
		if err != nil {
			return err
		}
		claimed = len(evs)
		if claimed == 0 {
			return nil
		}
		subs, err := loadSubscribers(ctx, tx, evs)
		if err != nil {
			return err
		}
		var batch []any
		var n int
		heldFor := map[string]bool{}
		flush := func() error {
			if n == 0 {
				return nil
			}
			q := `INSERT INTO webhook_deliveries (webhook_id, workspace_id, event_id, event_seq, event_at, held, attempts, due_at, next_attempt_at) VALUES ` +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, 0, ?, ?),", n), ",") +
				` ON CONFLICT (webhook_id, event_id) DO NOTHING`
			_, err := tx.Exec(ctx, q, batch...)
			batch, n = batch[:0], 0
			return err
		}
		nowMs := store.Millis(now)
		for _, e := range evs {
			for _, sub := range subs[e.WorkspaceID] {
				if !sub.wants(e) {
					continue
				}
				held := 0
				if !sub.active {
					held = 1
					heldFor[sub.id] = true
				}
				batch = append(batch, sub.id, e.WorkspaceID, e.ID, e.Seq, e.At, held, nowMs, nowMs)
				if n++; n == 100 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		for id := range heldFor {
			if err := trimHeld(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	})
	return claimed, err
}

// loadSubscribers reads the endpoints of the workspaces behind a batch of
// events.
func loadSubscribers(ctx context.Context, tx *store.Tx, evs []events.Claimed) (map[string][]subscriber, error) {
	var wsIDs []any
	seen := map[string]bool{}
	for _, e := range evs {
		if !seen[e.WorkspaceID] {
			seen[e.WorkspaceID] = true
			wsIDs = append(wsIDs, e.WorkspaceID)
		}
	}
	out := map[string][]subscriber{}
	for chunk := range slices.Chunk(wsIDs, 512) {
		args, in := store.PaddedIn(nil, chunk)
		rows, err := tx.Query(ctx, `SELECT id, workspace_id, events, active, COALESCE(mailbox_id, '') FROM webhooks WHERE workspace_id IN (`+in+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var sub subscriber
			var ws, evJSON string
			var active int
			if err := rows.Scan(&sub.id, &ws, &evJSON, &active, &sub.mailbox); err != nil {
				rows.Close()
				return nil, err
			}
			_ = json.Unmarshal([]byte(evJSON), &sub.events)
			sub.active = active == 1
			out[ws] = append(out[ws], sub)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// housekeep drops held events past the hold window and delivery log rows
// past LogRetention.
func (s *Service) housekeep(ctx context.Context) error {
	now := s.clock.Now()
	if _, err := s.db.Exec(ctx, `DELETE FROM webhook_deliveries WHERE held = 1 AND event_at < ?`, store.Millis(now.Add(-HoldTTL))); err != nil {
		return err
	}
	// In slices, so that a large backlog never holds the writer for long.
	cutoff := store.Millis(now.Add(-LogRetention))
	for {
		res, err := s.db.Exec(ctx, `DELETE FROM webhook_attempts WHERE id IN
			(SELECT id FROM webhook_attempts WHERE created_at < ? LIMIT 5000)`, cutoff)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n < 5000 {
			return nil
		}
	}
}
