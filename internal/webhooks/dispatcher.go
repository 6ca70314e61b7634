package webhooks

import (
	"context"
	"slices"
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
	return slices.Contains(sub.events, e.Type) && reaches(sub.mailbox, e.MailboxID, e.Type)
}

// reaches reports whether an event of type kind about mailbox eventBox (""
// for none) may reach an endpoint scoped to endpointBox ("" for none), or a
// caller bound to it: a mailbox's received mail reaches only that mailbox,
// and of the events without a mailbox only those MailboxScoped allows.
func reaches(endpointBox, eventBox, kind string) bool {
	if endpointBox == "" {
		return true
	}
	if eventBox != "" {
		return eventBox == endpointBox
	}
	return MailboxScoped(kind)
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
		scoped := map[string]bool{} // workspaces with an endpoint scoped to a mailbox
		for ws, list := range subs {
			for _, sub := range list {
				scoped[ws] = scoped[ws] || sub.mailbox != ""
			}
		}
		if err := s.attributeEmails(ctx, tx, evs, scoped); err != nil {
			return err
		}
		var batch []any
		var n int
		heldFor := map[string]bool{}
		flush := func() error {
			if n == 0 {
				return nil
			}
			_, err := queueDeliveries(ctx, tx, n, batch)
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
