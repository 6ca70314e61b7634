package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"slices"
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
	SvixSignatures           bool   // deliveries also carry Svix-style signature headers
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
	// SvixSignatures adds Svix-style signature headers to every delivery.
	SvixSignatures bool
}

// UpdateParams is the body of PATCH /v1/webhooks/{id}; nil fields are left
// untouched.
type UpdateParams struct {
	URL            *string
	Events         *[]string
	Active         *bool
	Headers        *map[string]string
	RotateSecret   bool
	SvixSignatures *bool
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
		SvixSignatures: p.SvixSignatures,
	}
	if err := insertEndpoint(ctx, s.db, e, sealed); err != nil {
		return nil, err
	}
	return e, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanEndpoint(r rowScanner, now time.Time) (*Endpoint, error) {
	var e Endpoint
	var evJSON, hJSON string
	var active int
	var reason sql.NullString
	var disabledAt, lastOK, lastFail, prevUntil sql.NullInt64
	var created, updated int64
	var svix int
	if err := r.Scan(&e.ID, &e.WorkspaceID, &e.URL, &evJSON, &hJSON, &active, &reason, &disabledAt,
		&e.ConsecutiveFailures, &lastOK, &lastFail, &prevUntil, &created, &updated, &e.MailboxID, &svix); err != nil {
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
	e.Active, e.SvixSignatures = active == 1, svix == 1
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

// Get returns one endpoint of the workspace, without its secret. boundTo,
// when not "", is the mailbox the caller's key is bound to: an endpoint not
// scoped to it answers not_found, as another workspace's would.
func (s *Service) Get(ctx context.Context, workspaceID, boundTo, id string) (*Endpoint, error) {
	now := s.clock.Now()
	e, err := readEndpoint(ctx, s.db, workspaceID, id, now)
	if errors.Is(err, store.ErrNotFound) || (err == nil && boundTo != "" && e.MailboxID != boundTo) {
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

// List returns the workspace's endpoints, oldest first; for a caller bound
// to a mailbox (boundTo), only those scoped to it.
func (s *Service) List(ctx context.Context, workspaceID, boundTo string) ([]*Endpoint, error) {
	now := s.clock.Now()
	out, err := listEndpoints(ctx, s.db, workspaceID, now)
	if err != nil {
		return nil, err
	}
	if boundTo != "" {
		out = slices.DeleteFunc(out, func(e *Endpoint) bool { return e.MailboxID != boundTo })
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
		n, err := countHeld(ctx, s.db, e.ID, now.Add(-HoldTTL))
		if err != nil {
			return err
		}
		e.HeldCount = n
	}
	return nil
}

// Update applies a PATCH. A change that changes nothing answers 400
// nothing_to_update. Re-enabling resets the failure count and releases the
// held events; disabling holds the queued ones.
func (s *Service) Update(ctx context.Context, workspaceID, boundTo, id string, p UpdateParams) (*Endpoint, error) {
	cur, err := s.Get(ctx, workspaceID, boundTo, id)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	ch, err := s.changesOf(cur, p, now)
	if err != nil {
		return nil, err
	}
	if len(ch.sets) == 0 {
		return nil, apierr.BadRequest("nothing_to_update", "The request changes nothing on this webhook.").
			WithNext("Send at least one of url, events, active, headers or rotate_secret with a new value.")
	}
	ch.set("updated_at", store.Millis(now))
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		found, err := updateEndpoint(ctx, tx, workspaceID, id, ch.sets, ch.args)
		if err != nil {
			return err
		}
		if !found {
			return errEndpointNotFound()
		}
		switch {
		case ch.enable:
			return releaseHeld(ctx, tx, id, now)
		case ch.disable:
			return holdQueued(ctx, tx, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ch.enable {
		s.Kick()
	}
	e, err := s.Get(ctx, workspaceID, boundTo, id)
	if err != nil {
		return nil, err
	}
	if p.RotateSecret {
		e.Secret = ch.secret
		e.PreviousSecretValidUntil = &ch.prevUntil
	}
	return e, nil
}

// endpointChange is what a PATCH changes on the row (the SET list), and
// what it asks of the queue and the answer besides.
type endpointChange struct {
	sets            []string
	args            []any
	enable, disable bool      // active turned on (held events go) or off (queued ones wait)
	secret          string    // the new secret, when rotated
	prevUntil       time.Time // until when the old secret still signs
}

func (c *endpointChange) set(col string, v any) {
	c.sets, c.args = append(c.sets, col+" = ?"), append(c.args, v)
}

// changesOf checks a PATCH against the endpoint as it is and keeps only
// the fields it changes, so that a PATCH repeating the row changes nothing.
func (s *Service) changesOf(cur *Endpoint, p UpdateParams, now time.Time) (*endpointChange, error) {
	ch := &endpointChange{}
	if p.URL != nil && *p.URL != cur.URL {
		if err := ValidateURL(*p.URL, s.allowPrivate); err != nil {
			return nil, err
		}
		ch.set("url", *p.URL)
	}
	if p.Events != nil {
		evs, err := normalizeEvents(*p.Events)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(evs, cur.Events) {
			b, _ := json.Marshal(evs)
			ch.set("events", string(b))
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
			ch.set("headers", string(b))
		}
	}
	ch.enable = p.Active != nil && *p.Active && !cur.Active
	ch.disable = p.Active != nil && !*p.Active && cur.Active
	if ch.enable {
		ch.set("active", 1)
		ch.set("consecutive_failures", 0)
		ch.set("accepted_at", store.Millis(now))
		ch.sets = append(ch.sets, "disabled_reason = NULL", "disabled_at = NULL")
	}
	if ch.disable {
		ch.set("active", 0)
		ch.set("disabled_reason", DisabledManual)
		ch.set("disabled_at", store.Millis(now))
	}
	if p.SvixSignatures != nil && *p.SvixSignatures != cur.SvixSignatures {
		ch.set("svix_signatures", store.BoolInt(*p.SvixSignatures))
	}
	if p.RotateSecret {
		ch.secret = NewSecret()
		sealed, err := s.box.Seal([]byte(ch.secret))
		if err != nil {
			return nil, err
		}
		ch.prevUntil = now.Add(SecretGrace)
		ch.sets = append(ch.sets, "previous_secret = secret")
		ch.set("secret", sealed)
		ch.set("previous_secret_until", store.Millis(ch.prevUntil))
	}
	return ch, nil
}

// Delete removes an endpoint and drops its queued and held deliveries. Its
// delivery log stays readable.
func (s *Service) Delete(ctx context.Context, workspaceID, boundTo, id string) error {
	if boundTo != "" {
		if _, err := s.Get(ctx, workspaceID, boundTo, id); err != nil {
			return err
		}
	}
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		found, err := deleteEndpoint(ctx, tx, workspaceID, id)
		if err == nil && !found {
			return errEndpointNotFound()
		}
		return err
	})
}
