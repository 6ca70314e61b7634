package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// Delivery is one row of the delivery log: an attempt, or the row that
// records an abandoned event (no status code).
type Delivery struct {
	ID           string
	WebhookID    string
	EventID      string
	Event        string
	StatusCode   *int
	ResponseBody string
	DurationMs   int64
	Error        *string
	Attempt      int
	CreatedAt    time.Time
	// Retry is set on the newest attempt of an event that still has
	// attempts owed.
	Retry *Retry
}

// Retry is the schedule of an event's next attempt. NextAttemptAt is nil
// while the event is held for a disabled endpoint.
type Retry struct {
	NextAttempt       int
	NextAttemptAt     *time.Time
	AttemptsMade      int
	AttemptsRemaining int
}

// DeliveryQuery selects a page of the log, newest first.
type DeliveryQuery struct {
	WebhookID string // "" for every endpoint of the workspace
	// BoundTo, when not "", is the mailbox the caller's key is bound to: only
	// the deliveries of endpoints scoped to it are read.
	BoundTo string
	// EventIDs, when not empty, keeps the deliveries of these events only
	// (an email's page: the deliveries of its events).
	EventIDs []string
	Event    string // "" for every event type
	Limit    int
	// After continues below the row with this time and id.
	AfterAt int64
	AfterID string
}

// ListDeliveries reads the workspace's delivery log, newest first.
func (s *Service) ListDeliveries(ctx context.Context, workspaceID string, q DeliveryQuery) ([]Delivery, error) {
	if q.BoundTo != "" && q.WebhookID != "" {
		if _, err := s.Get(ctx, workspaceID, q.BoundTo, q.WebhookID); err != nil {
			return nil, err
		}
	} else if q.WebhookID != "" {
		exists, err := endpointExists(ctx, s.db, workspaceID, q.WebhookID)
		if err != nil {
			return nil, err
		}
		if !exists {
			return nil, errEndpointNotFound()
		}
	}
	out, kinds, err := listAttempts(ctx, s.db, workspaceID, q)
	if err != nil {
		return nil, err
	}
	return out, s.fillRetries(ctx, out, kinds)
}

// ManualResult is what the endpoint answered to a test delivery or a
// replay.
type ManualResult struct {
	DeliveryID   string
	EventID      string
	Event        string
	StatusCode   *int
	ResponseBody string
	DurationMs   int64
	Error        *string
	Success      bool
}

// SendTest sends a test event to an endpoint now and answers what it
// answered. The event is named after the endpoint's first subscribed event
// and its data carries test: true and test_mode: true. If it lands, the
// endpoint counts it as accepted and, if disabled, is re-enabled and its
// held events released.
func (s *Service) SendTest(ctx context.Context, workspaceID, boundTo, webhookID string) (*ManualResult, error) {
	e, err := s.Get(ctx, workspaceID, boundTo, webhookID)
	if err != nil {
		return nil, err
	}
	name := EventEmailDelivered
	if len(e.Events) > 0 {
		name = e.Events[0]
	}
	seq, _ := Sequence(name)
	now := s.clock.Now()
	eventID := ids.New("whd")
	body, err := events.MarshalEnvelope(eventID, name, seq, now, testData(name))
	if err != nil {
		return nil, err
	}
	res, err := s.sendManual(ctx, e, "test", eventID, sql.NullInt64{}, name, body, true, now)
	if err != nil || !res.Success {
		return res, err
	}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		done := s.clock.Now()
		if err := markAccepted(ctx, tx, e.ID, done); err != nil {
			return err
		}
		if e.Active {
			return nil
		}
		if err := reenable(ctx, tx, e.ID, done); err != nil {
			return err
		}
		return releaseHeld(ctx, tx, e.ID, done)
	})
	if err != nil {
		return nil, err
	}
	s.Kick()
	return res, nil
}

func testData(name string) []byte {
	if len(name) > 6 && name[:6] == "email." {
		return []byte(`{"email_id":"em_test","from":"Mailroom <test@mailroom.invalid>","to":["delivered@mailroom.invalid"],"subject":"Test webhook","tags":{},"test_mode":true,"test":true}`)
	}
	return []byte(`{"test":true,"test_mode":true}`)
}

// Replay sends a stored delivery again now, with the same event id (and so
// the same body; only the signature is fresh), and answers what the
// endpoint answered. It does not change the endpoint's state. A caller
// bound to a mailbox (boundTo) replays only its endpoints' deliveries.
func (s *Service) Replay(ctx context.Context, workspaceID, boundTo, deliveryID string) (*ManualResult, error) {
	webhookID, eventID, eventSeq, name, payload, err := readAttempt(ctx, s.db, workspaceID, deliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("delivery")
	}
	if err != nil {
		return nil, err
	}
	e, err := s.Get(ctx, workspaceID, boundTo, webhookID)
	if apierr.Is(err, "not_found") {
		return nil, apierr.NotFound("delivery")
	}
	if err != nil {
		return nil, err
	}
	body := []byte(payload.String)
	if !payload.Valid {
		var seqs []any
		if eventSeq.Valid {
			seqs = append(seqs, eventSeq.Int64)
		}
		bodies, err := s.loadEvents(ctx, seqs)
		if err != nil {
			return nil, err
		}
		ev, ok := bodies[eventID]
		if !ok {
			return nil, apierr.NotFound("delivery").WithNext("The event behind this delivery is no longer stored.")
		}
		body = ev.body
	}
	return s.sendManual(ctx, e, "replay", eventID, eventSeq, name, body, payload.Valid, s.clock.Now())
}

// sendManual makes one attempt outside the queue and logs it. keepBody
// stores the body on the log row, for events not in the event log.
func (s *Service) sendManual(ctx context.Context, e *Endpoint, kind, eventID string, eventSeq sql.NullInt64, name string, body []byte, keepBody bool, now time.Time) (*ManualResult, error) {
	targets, err := s.loadTargets(ctx, []any{e.ID}, now)
	if err != nil {
		return nil, err
	}
	t, ok := targets[e.ID]
	if !ok {
		return nil, errEndpointNotFound()
	}
	a := Deliver(ctx, s.client.Load(), t.url, t.headers, svixHeaders(eventID, now, body, t.secrets),
		eventID, name, body, Sign(now, body, t.secrets...), now)
	j := &job{workspaceID: e.WorkspaceID, webhookID: e.ID, eventID: eventID, eventSeq: eventSeq, eventName: name}
	row := attemptLogRow(j, kind, 1, a, now)
	if keepBody {
		p := string(body)
		row.payload = &p
	}
	if err := s.db.InTx(ctx, func(tx *store.Tx) error { return insertLogRows(ctx, tx, []logRow{row}) }); err != nil {
		return nil, err
	}
	return &ManualResult{
		DeliveryID: row.id, EventID: eventID, Event: name, StatusCode: row.status, ResponseBody: a.Body,
		DurationMs: row.durationMs, Error: row.err, Success: a.Success,
	}, nil
}
