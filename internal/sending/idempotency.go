package sending

import (
	"context"
	"time"

	"mailroom/internal/apierr"
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
