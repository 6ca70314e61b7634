package contacts

import (
	"context"
	"errors"
	"time"

	"mailroom/internal/store"
)

// UnsubscribeEverywhere records an "unsubscribe from all" on the contact
// with the address: every membership that is subscribed or pending becomes
// unsubscribed (cleaned ones stay cleaned). It queues no automation event
// and creates no contact for an unknown address, so nothing it does can
// subscribe the address again. It answers how many memberships changed.
func (s *Service) UnsubscribeEverywhere(ctx context.Context, workspaceID, email string) (int, error) {
	n := 0
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		c, err := contactByEmail(ctx, tx, workspaceID, email)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		n, err = unsubscribeAll(ctx, tx, c.ID, s.clock.Now())
		return err
	})
	return n, err
}

// unsubscribeAll turns the contact's subscribed and pending memberships
// unsubscribed and answers how many changed.
func unsubscribeAll(ctx context.Context, tx *store.Tx, contactID string, now time.Time) (int, error) {
	ms, err := contactMemberships(ctx, tx, contactID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range ms {
		if m.Status != StatusSubscribed && m.Status != StatusPending {
			continue
		}
		m.Status, m.UpdatedAt = StatusUnsubscribed, now
		if err := updateMember(ctx, tx, m); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
