package sending

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/store"
)

// IdempotencyWindow is how long a key is remembered (the spec's 24 hours).
const IdempotencyWindow = 24 * time.Hour

func errKeyReused() error {
	return apierr.Conflict("idempotency_key_reused", "This idempotency_key was used in the last 24 hours with a different request body.").
		WithNext("Use a new idempotency_key for a different email, or resend the first body unchanged.")
}

func errInFlight() error {
	return apierr.Conflict("idempotency_in_flight", "A send with this idempotency_key is still being processed.").
		WithNext("Retry the identical request shortly to get its result.")
}

// reserveInMemory claims the key on this node for the duration of the
// booking. A key already being booked answers idempotency_in_flight (or
// idempotency_key_reused when the body differs); a key already stored
// answers its first outcome. On success the caller owns the claim and must
// release it.
func (s *Service) reserveInMemory(ctx context.Context, ws, key, fp string, now time.Time) (*Outcome, error) {
	if held, ok := s.inflight.acquire(ws, key, fp); !ok {
		if held != fp {
			return nil, errKeyReused()
		}
		return nil, errInFlight()
	}
	stored, err := lookupKey(ctx, s.db, ws, key, now)
	if err != nil || stored != nil {
		s.inflight.release(ws, key)
		if err != nil {
			return nil, err
		}
		return stored.answer(fp)
	}
	return nil, nil
}

// storedKey is a remembered first outcome.
type storedKey struct {
	fingerprint string
	outcome     Outcome
}

func (k *storedKey) answer(fp string) (*Outcome, error) {
	if k.fingerprint != fp {
		return nil, errKeyReused()
	}
	o := k.outcome
	return &o, nil
}

type keyQuerier interface {
	QueryRow(ctx context.Context, q string, args ...any) *store.Row
}

// lookupKey reads a live (younger than 24 hours) key, or nil.
func lookupKey(ctx context.Context, q keyQuerier, ws, key string, now time.Time) (*storedKey, error) {
	var k storedKey
	var status int
	var response string
	var created int64
	err := q.QueryRow(ctx, `SELECT fingerprint, status, response, created_at FROM idempotency_keys WHERE workspace_id = ? AND key = ?`, ws, key).
		Scan(&k.fingerprint, &status, &response, &created)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if store.FromMillis(created).Before(now.Add(-IdempotencyWindow)) {
		return nil, nil
	}
	if err := json.Unmarshal([]byte(response), &k.outcome); err != nil {
		return nil, err
	}
	k.outcome.HTTPStatus = status
	return &k, nil
}

// reserveKey stores the key with its outcome inside the accepting
// transaction. The primary key makes a race between nodes yield exactly one
// email: the loser finds the winner's row (PostgreSQL makes it wait for the
// winner's commit) and answers the winner's outcome. An expired row is
// replaced.
func reserveKey(ctx context.Context, tx *store.Tx, ws, key, fp string, out Outcome, now time.Time) (*Outcome, error) {
	body, _ := json.Marshal(out)
	res, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (workspace_id, key, fingerprint, email_id, status, response, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, key) DO NOTHING`,
		ws, key, fp, out.ID, out.HTTPStatus, string(body), store.Millis(now))
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, nil
	}
	stored, err := lookupKey(ctx, tx, ws, key, now)
	if err != nil {
		return nil, err
	}
	if stored != nil {
		return stored.answer(fp)
	}
	// The row is older than the window: it no longer counts.
	_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET fingerprint = ?, email_id = ?, status = ?, response = ?, created_at = ?
		WHERE workspace_id = ? AND key = ?`, fp, out.ID, out.HTTPStatus, string(body), store.Millis(now), ws, key)
	return nil, err
}

// forgetKeys deletes the keys stored before cutoff.
func forgetKeys(ctx context.Context, db *store.DB, cutoff time.Time) error {
	_, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < ?`, store.Millis(cutoff))
	return err
}
