package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// Why an endpoint is disabled (disabled_reason).
const (
	DisabledGone    = "gone"    // it answered 410
	DisabledFailing = "failing" // 20 consecutive failures and 18 h without a 2xx
	DisabledManual  = "manual"  // PATCH active false
)

// Limits on what an endpoint carries.
const (
	maxStaticHeaders    = 20
	maxHeaderValueBytes = 1024
)

// Endpoint is a registered webhook endpoint as the API shows it. Secret is
// set only in the answer that created or rotated it.
type Endpoint struct {
	ID                       string
	WorkspaceID              string
	URL                      string
	Events                   []string
	Headers                  map[string]string
	Active                   bool
	DisabledReason           string
	DisabledAt               *time.Time
	ConsecutiveFailures      int
	LastSuccessAt            *time.Time
	LastFailureAt            *time.Time
	PreviousSecretValidUntil *time.Time
	HeldCount                int
	MailboxID                string // "" when not scoped to a mailbox
	CreatedAt                time.Time
	UpdatedAt                time.Time

	Secret string
}

// CreateParams is the body of POST /v1/webhooks. Events nil means the
// default subscription.
type CreateParams struct {
	URL     string
	Events  []string
	Headers map[string]string
	// MailboxID scopes the endpoint to one mailbox (checked by the
	// caller): it gets that mailbox's received-mail events and no
	// workspace or automation events.
	MailboxID string
}

// UpdateParams is the body of PATCH /v1/webhooks/{id}; nil fields are left
// untouched.
type UpdateParams struct {
	URL          *string
	Events       *[]string
	Active       *bool
	Headers      *map[string]string
	RotateSecret bool
}

// normalizeEvents validates a subscription list: known names (message.*
// read as email.*), at least one, duplicates folded.
func normalizeEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, apierr.InvalidRequest("events: name at least one event, or omit events for the default (%s).", "email.delivered, email.bounced, email.complained")
	}
	out := make([]string, 0, len(in))
	for _, e := range in {
		n, ok := NormalizeEventName(e)
		if !ok {
			return nil, apierr.InvalidRequest("events: %q is not an event this service sends.", e).
				WithNext("Known events: email.sent, email.delivered, email.bounced, email.complained, email.received, email.filtered, domain.verified, workspace.throttled, workspace.paused, workspace.resumed, automation.run.started, automation.run.failed.")
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func validateHeaders(h map[string]string) error {
	if len(h) > maxStaticHeaders {
		return apierr.InvalidRequest("headers: at most %d static headers.", maxStaticHeaders)
	}
	for k, v := range h {
		if len(v) > maxHeaderValueBytes {
			return apierr.InvalidRequest("headers: the value of %s is longer than %d bytes.", k, maxHeaderValueBytes)
		}
	}
	return ValidateStaticHeaders(h)
}

// Create registers an endpoint and returns it with its secret, the only
// time the secret is shown.
func (s *Service) Create(ctx context.Context, workspaceID string, p CreateParams) (*Endpoint, error) {
	if err := ValidateURL(p.URL, s.allowPrivate); err != nil {
		return nil, err
	}
	evs := DefaultEvents()
	if p.Events != nil {
		var err error
		if evs, err = normalizeEvents(p.Events); err != nil {
			return nil, err
		}
	}
	if p.Headers == nil {
		p.Headers = map[string]string{}
	}
	if err := validateHeaders(p.Headers); err != nil {
		return nil, err
	}
	secret := NewSecret()
	sealed, err := s.box.Seal([]byte(secret))
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	e := &Endpoint{
		ID: ids.New("wh"), WorkspaceID: workspaceID, URL: p.URL, Events: evs, Headers: p.Headers,
		Active: true, CreatedAt: now, UpdatedAt: now, Secret: secret, MailboxID: p.MailboxID,
	}
	var mailboxID any
	if p.MailboxID != "" {
		mailboxID = p.MailboxID
	}
	evJSON, _ := json.Marshal(evs)
	hJSON, _ := json.Marshal(p.Headers)
	_, err = s.db.Exec(ctx, `INSERT INTO webhooks (id, workspace_id, url, events, headers, secret, active,
		consecutive_failures, accepted_at, created_at, updated_at, mailbox_id) VALUES (?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?, ?)`,
		e.ID, workspaceID, e.URL, string(evJSON), string(hJSON), sealed, store.Millis(now), store.Millis(now), store.Millis(now), mailboxID)
	if err != nil {
		return nil, err
	}
	return e, nil
}

const endpointColumns = `id, workspace_id, url, events, headers, active, disabled_reason, disabled_at,
	consecutive_failures, last_success_at, last_failure_at, previous_secret_until, created_at, updated_at, COALESCE(mailbox_id, '')`

type rowScanner interface{ Scan(dest ...any) error }

func scanEndpoint(r rowScanner, now time.Time) (*Endpoint, error) {
	var e Endpoint
	var evJSON, hJSON string
	var active int
	var reason sql.NullString
	var disabledAt, lastOK, lastFail, prevUntil sql.NullInt64
	var created, updated int64
	if err := r.Scan(&e.ID, &e.WorkspaceID, &e.URL, &evJSON, &hJSON, &active, &reason, &disabledAt,
		&e.ConsecutiveFailures, &lastOK, &lastFail, &prevUntil, &created, &updated, &e.MailboxID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	_ = json.Unmarshal([]byte(evJSON), &e.Events)
	_ = json.Unmarshal([]byte(hJSON), &e.Headers)
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	e.Active = active == 1
	e.DisabledReason = reason.String
	e.DisabledAt = store.NullMillis(disabledAt)
	e.LastSuccessAt = store.NullMillis(lastOK)
	e.LastFailureAt = store.NullMillis(lastFail)
	if t := store.NullMillis(prevUntil); t != nil && t.After(now) {
		e.PreviousSecretValidUntil = t
	}
	e.CreatedAt, e.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return &e, nil
}

func errEndpointNotFound() error { return apierr.NotFound("webhook") }

// Get returns one endpoint of the workspace, without its secret.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (*Endpoint, error) {
	now := s.clock.Now()
	e, err := scanEndpoint(s.db.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhooks WHERE workspace_id = ? AND id = ?`, workspaceID, id), now)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errEndpointNotFound()
	}
	if err != nil {
		return nil, err
	}
	if err := s.fillHeld(ctx, []*Endpoint{e}, now); err != nil {
		return nil, err
	}
	return e, nil
}

// List returns the workspace's endpoints, oldest first.
func (s *Service) List(ctx context.Context, workspaceID string) ([]*Endpoint, error) {
	now := s.clock.Now()
	rows, err := s.db.Query(ctx, `SELECT `+endpointColumns+` FROM webhooks WHERE workspace_id = ? ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Endpoint
	for rows.Next() {
		e, err := scanEndpoint(rows, now)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, s.fillHeld(ctx, out, now)
}

// fillHeld counts the events held for each disabled endpoint (those still
// inside the hold window).
func (s *Service) fillHeld(ctx context.Context, es []*Endpoint, now time.Time) error {
	for _, e := range es {
		if e.Active {
			continue
		}
		if err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = ? AND held = 1 AND event_at >= ?`,
			e.ID, store.Millis(now.Add(-HoldTTL))).Scan(&e.HeldCount); err != nil {
			return err
		}
	}
	return nil
}

// Update applies a PATCH. A change that changes nothing answers 400
// nothing_to_update. Re-enabling resets the failure count and releases the
// held events; disabling holds the queued ones.
func (s *Service) Update(ctx context.Context, workspaceID, id string, p UpdateParams) (*Endpoint, error) {
	cur, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	var sets []string
	var args []any
	set := func(col string, v any) { sets = append(sets, col+" = ?"); args = append(args, v) }
	if p.URL != nil && *p.URL != cur.URL {
		if err := ValidateURL(*p.URL, s.allowPrivate); err != nil {
			return nil, err
		}
		set("url", *p.URL)
	}
	if p.Events != nil {
		evs, err := normalizeEvents(*p.Events)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(evs, cur.Events) {
			b, _ := json.Marshal(evs)
			set("events", string(b))
		}
	}
	if p.Headers != nil {
		h := *p.Headers
		if h == nil {
			h = map[string]string{}
		}
		if err := validateHeaders(h); err != nil {
			return nil, err
		}
		if !maps.Equal(h, cur.Headers) {
			b, _ := json.Marshal(h)
			set("headers", string(b))
		}
	}
	now := s.clock.Now()
	enable := p.Active != nil && *p.Active && !cur.Active
	disable := p.Active != nil && !*p.Active && cur.Active
	if enable {
		set("active", 1)
		set("consecutive_failures", 0)
		set("accepted_at", store.Millis(now))
		sets = append(sets, "disabled_reason = NULL", "disabled_at = NULL")
	}
	if disable {
		set("active", 0)
		set("disabled_reason", DisabledManual)
		set("disabled_at", store.Millis(now))
	}
	var secret string
	var prevUntil time.Time
	if p.RotateSecret {
		secret = NewSecret()
		sealed, err := s.box.Seal([]byte(secret))
		if err != nil {
			return nil, err
		}
		prevUntil = now.Add(SecretGrace)
		sets = append(sets, "previous_secret = secret")
		set("secret", sealed)
		set("previous_secret_until", store.Millis(prevUntil))
	}
	if len(sets) == 0 {
		return nil, apierr.BadRequest("nothing_to_update", "The request changes nothing on this webhook.").
			WithNext("Send at least one of url, events, active, headers or rotate_secret with a new value.")
	}
	set("updated_at", store.Millis(now))
	q := "UPDATE webhooks SET "
	for i, c := range sets {
		if i > 0 {
			q += ", "
		}
		q += c
	}
	q += " WHERE workspace_id = ? AND id = ?"
	args = append(args, workspaceID, id)
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		res, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errEndpointNotFound()
		}
		switch {
		case enable:
			return releaseHeld(ctx, tx, id, now)
		case disable:
			return holdQueued(ctx, tx, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if enable {
		s.Kick()
	}
	e, err := s.Get(ctx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	if p.RotateSecret {
		e.Secret = secret
		e.PreviousSecretValidUntil = &prevUntil
	}
	return e, nil
}

// Delete removes an endpoint and drops its queued and held deliveries. Its
// delivery log stays readable.
func (s *Service) Delete(ctx context.Context, workspaceID, id string) error {
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE workspace_id = ? AND id = ?`, workspaceID, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errEndpointNotFound()
		}
		_, err = tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ?`, id)
		return err
	})
}

// holdQueued moves an endpoint's queued deliveries into the held queue (its
// endpoint was just disabled) and trims the queue to HoldMax.
func holdQueued(ctx context.Context, tx *store.Tx, webhookID string) error {
	if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET held = 1 WHERE webhook_id = ? AND held = 0`, webhookID); err != nil {
		return err
	}
	return trimHeld(ctx, tx, webhookID)
}

// trimHeld keeps the newest HoldMax held events of an endpoint and drops
// the older ones, as the spec's state table says.
func trimHeld(ctx context.Context, tx *store.Tx, webhookID string) error {
	_, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND held = 1 AND seq NOT IN
		(SELECT seq FROM webhook_deliveries WHERE webhook_id = ? AND held = 1 ORDER BY event_at DESC, seq DESC LIMIT ?)`,
		webhookID, webhookID, HoldMax)
	return err
}

// releaseHeld makes an endpoint's held events due now, after dropping those
// older than HoldTTL. Attempt counts are kept: the curve goes on where it
// stopped.
func releaseHeld(ctx context.Context, tx *store.Tx, webhookID string, now time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND held = 1 AND event_at < ?`,
		webhookID, store.Millis(now.Add(-HoldTTL))); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET held = 0, due_at = ?, next_attempt_at = ?, claim = NULL
		WHERE webhook_id = ? AND held = 1`, store.Millis(now), store.Millis(now), webhookID)
	return err
}

// ListenersQuery is the read the send path folds into its one batch query
// (sending's lookupSuppressions): rows (tag, workspace_id, empty, empty) of the
// workspaces among ws with at least one endpoint, with tag a constant first
// column that tells these rows from the other reads of a UNION ALL. args
// gains the workspace ids.
func ListenersQuery(tag int, args []any, ws []string) (string, []any) {
	args, in := store.PaddedIn(args, ws)
	return `SELECT DISTINCT ` + strconv.Itoa(tag) + `, workspace_id, '', '' FROM webhooks WHERE workspace_id IN (` + in + `)`, args
}
