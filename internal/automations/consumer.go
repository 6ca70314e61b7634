package automations

import (
	"context"
	"log/slog"
	"time"

	"mailroom/internal/contacts"
	"mailroom/internal/jobs"
	"mailroom/internal/store"
)

// consumeBatch is how many automation events one transaction consumes.
const consumeBatch = 500

// Consumer turns the automation events the contacts area queues into runs:
// one transaction reads a batch, inserts a run (and its job) per matching
// enabled automation, and marks the batch consumed, so each real change
// starts its runs exactly once. It wakes on the contacts area's signal and
// polls besides, for events another node committed.
type Consumer struct {
	s    *Service
	log  *slog.Logger
	poll time.Duration
	stop context.CancelFunc
	done chan struct{}
}

// NewConsumer builds the consumer; Start runs it.
func NewConsumer(s *Service, log *slog.Logger, poll time.Duration) *Consumer {
	if poll <= 0 {
		poll = time.Second
	}
	return &Consumer{s: s, log: log, poll: poll}
}

// Start runs the loop until Stop.
func (c *Consumer) Start(ctx context.Context) error {
	ctx, c.stop = context.WithCancel(ctx)
	c.done = make(chan struct{})
	wake := c.s.db.Signals(contacts.EventsSignal)
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.poll)
		defer t.Stop()
		for {
			for {
				n, err := c.s.ConsumeEvents(ctx)
				if err != nil {
					if ctx.Err() == nil {
						c.log.Error("consuming automation events", "err", err)
					}
					break
				}
				if n < consumeBatch {
					break
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the loop; a second call does nothing.
func (c *Consumer) Stop(context.Context) error {
	if c.stop == nil {
		return nil
	}
	c.stop()
	<-c.done
	c.stop = nil
	return nil
}

// ConsumeEvents consumes one batch of pending events and answers how many
// it read.
func (s *Service) ConsumeEvents(ctx context.Context) (int, error) {
	n := 0
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		evs, err := contacts.PendingEvents(ctx, tx, consumeBatch)
		if err != nil || len(evs) == 0 {
			n = 0
			return err
		}
		n = len(evs)
		byWS := map[string][]Automation{}
		started := map[string][]string{} // workspace -> runs: one job each
		ids := make([]string, 0, len(evs))
		now := s.clock.Now()
		for _, ev := range evs {
			ids = append(ids, ev.ID)
			as, ok := byWS[ev.WorkspaceID]
			if !ok {
				if as, err = enabledEventAutomations(ctx, tx, ev.WorkspaceID); err != nil {
					return err
				}
				byWS[ev.WorkspaceID] = as
			}
			for _, a := range as {
				if !matches(a, ev) {
					continue
				}
				email, _ := ev.Data["email"].(string)
				audience, _ := ev.Data["audience_id"].(string)
				data := map[string]any{"event": ev.Kind}
				for k, v := range ev.Data {
					data[k] = v
				}
				r := newRun(a, ev.ContactID, email, audience, "event:"+ev.ID, data, now)
				deferRun(tx, r)
				started[r.WorkspaceID] = append(started[r.WorkspaceID], r.ID)
			}
		}
		for ws, runIDs := range started {
			tx.AddJob(jobs.AutomationRunArgs{RunIDs: runIDs, WorkspaceID: ws})
		}
		return contacts.MarkEventsConsumed(ctx, tx, ids, now)
	})
	return n, err
}

// matches says whether an event starts a run of a: its kind, tag and
// audience, and not from before the automation existed (a change queued
// before it was created is not its business).
func matches(a Automation, ev contacts.AutomationEvent) bool {
	if a.Trigger != ev.Kind || ev.CreatedAt.Before(a.CreatedAt) {
		return false
	}
	switch a.Trigger {
	case EventTagAdded, EventTagRemoved:
		tag, _ := ev.Data["tag"].(string)
		return a.TriggerTag == "" || a.TriggerTag == tag
	case EventMemberSubscribed:
		aud, _ := ev.Data["audience_id"].(string)
		return a.TriggerAudienceID == "" || a.TriggerAudienceID == aud
	}
	return true
}
