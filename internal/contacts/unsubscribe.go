package contacts

import (
	"context"
	"errors"

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
		ms, err := contactMemberships(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		for _, m := range ms {
			if m.Status != StatusSubscribed && m.Status != StatusPending {
				continue
			}
			m.Status, m.UpdatedAt = StatusUnsubscribed, now
			if err := updateMember(ctx, tx, m); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
