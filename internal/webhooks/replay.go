package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"

	"mailroom/internal/apierr"
)

// ReplayResult is what one endpoint answered to a replay by event id.
type ReplayResult struct {
	WebhookID string
	ManualResult
}

// storedEvent is an event found by id: its name and body, and where the
// body came from (the event log, or the log row of a test event).
type storedEvent struct {
	name     string
	mailbox  string // the mailbox a received-mail event concerns, else ""
	seq      sql.NullInt64
	body     []byte
	keepBody bool
}

// ReplayEvent sends the event eventID (a whd_ id) again now, with the same
// id and body and a fresh signature, to webhookID when given (whatever it
// subscribes to: the caller named it), else to every active endpoint of the
// workspace subscribed to the event's type. The attempts run side by side
// and are answered in the endpoints' creation order. Like Replay, it does
// not change the endpoints' state. An endpoint scoped to a mailbox is never
// sent another mailbox's event, and a caller bound to a mailbox (boundTo)
// finds only the events of its mailbox and its own endpoints.
func (s *Service) ReplayEvent(ctx context.Context, workspaceID, boundTo, eventID, webhookID string) ([]ReplayResult, error) {
	ev, err := s.findEvent(ctx, workspaceID, eventID)
	if err != nil {
		return nil, err
	}
	if !reaches(boundTo, ev.mailbox, ev.name) {
		return nil, apierr.NotFound("delivery")
	}
	var targets []*Endpoint
	if webhookID != "" {
		e, err := s.Get(ctx, workspaceID, boundTo, webhookID)
		if err != nil {
			return nil, err
		}
		if !reaches(e.MailboxID, ev.mailbox, ev.name) {
			return nil, apierr.InvalidRequest("Webhook %s is scoped to mailbox %s and is never sent another mailbox's events.", e.ID, e.MailboxID)
		}
		targets = append(targets, e)
	} else {
		all, err := s.List(ctx, workspaceID, boundTo)
		if err != nil {
			return nil, err
		}
		for _, e := range all {
			if e.Active && slices.Contains(e.Events, ev.name) && reaches(e.MailboxID, ev.mailbox, ev.name) {
				targets = append(targets, e)
			}
		}
		if len(targets) == 0 {
			return nil, apierr.NotFound("webhook").WithNext("No active endpoint of this workspace subscribes to " + ev.name + "; pass webhook_id to replay the event to a given endpoint.")
		}
	}
	out := make([]ReplayResult, len(targets))
	errs := make([]error, len(targets))
	now := s.clock.Now()
	var wg sync.WaitGroup
	for i, e := range targets {
		wg.Go(func() {
			res, err := s.sendManual(ctx, e, "replay", eventID, ev.seq, ev.name, ev.body, ev.keepBody, now)
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = ReplayResult{WebhookID: e.ID, ManualResult: *res}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// EventBody reads the event eventID (a whd_ id) as delivered: its type and
// JSON body (the Resend SDKs' webhooks.events.get). A caller bound to a
// mailbox (boundTo) finds only its mailbox's events.
func (s *Service) EventBody(ctx context.Context, workspaceID, boundTo, eventID string) (string, []byte, error) {
	ev, err := s.findEvent(ctx, workspaceID, eventID)
	if err != nil {
		return "", nil, err
	}
	if !reaches(boundTo, ev.mailbox, ev.name) {
		return "", nil, apierr.NotFound("delivery")
	}
	return ev.name, ev.body, nil
}
