package contacts

import (
	"context"
	"slices"
	"time"

	"mailroom/internal/store"
)

// EventsSignal is the store signal a commit that queued automation events
// raises, so that the automations consumer on this node starts at once.
const EventsSignal = "automation_events"

type signalKey struct{}

// signalEvents wakes the consumer once per transaction, after its commit.
func signalEvents(tx *store.Tx) {
	tx.Local(signalKey{}, func() any {
		tx.AfterCommit(func() { tx.DB().Signal(EventsSignal) })
		return true
	})
}

func createdData(c Contact) map[string]any { return map[string]any{"email": c.Email} }

func subscribedData(m Member, email string) map[string]any {
	return map[string]any{"audience_id": m.AudienceID, "member_id": m.ID, "email": email}
}

// queueSubscribed queues member.subscribed when a membership that was not
// subscribed now is.
func queueSubscribed(ctx context.Context, tx *store.Tx, was string, m Member, email string, now time.Time) error {
	if was == StatusSubscribed || m.Status != StatusSubscribed {
		return nil
	}
	return insertEvent(ctx, tx, m.WorkspaceID, EventMemberSubscribed, m.ContactID, subscribedData(m, email), now)
}

// PendingEvents reads up to limit automation events not yet consumed,
// oldest first, locking them for the caller's transaction (another node's
// consumer skips them). The automations area consumes them.
func PendingEvents(ctx context.Context, tx *store.Tx, limit int) ([]AutomationEvent, error) {
	return pendingEvents(ctx, tx, limit)
}

// MarkEventsConsumed records that the automations area has acted on the
// events, in the transaction that started their runs.
func MarkEventsConsumed(ctx context.Context, tx *store.Tx, ids []string, now time.Time) error {
	return markConsumed(ctx, tx, ids, now)
}

// ContactIn reads one contact as it is now, in q (a transaction sees its
// own writes).
func ContactIn(ctx context.Context, q store.Querier, workspaceID, id string) (Contact, error) {
	c, err := contactByID(ctx, q, workspaceID, id)
	return c, notFound(err, errContactNotFound)
}

// ContactByEmail reads the contact with a normalized address.
func (s *Service) ContactByEmail(ctx context.Context, workspaceID, email string) (Contact, error) {
	c, err := contactByEmail(ctx, s.db, workspaceID, email)
	return c, notFound(err, errContactNotFound)
}

// MemberIn reads a contact's membership of an audience, in q.
func MemberIn(ctx context.Context, q store.Querier, audienceID, contactID string) (Member, error) {
	ms, err := membersOf(ctx, q, audienceID, []string{contactID})
	if err != nil {
		return Member{}, err
	}
	m, ok := ms[contactID]
	if !ok {
		return Member{}, errMemberNotFound()
	}
	return m, nil
}

// ChangeTagsTx adds and removes tags (normalized) on a contact in the
// caller's transaction, queueing an event per real change like any other
// tag change.
func (s *Service) ChangeTagsTx(ctx context.Context, tx *store.Tx, workspaceID, id string, add, remove []string) (TagChange, error) {
	c, err := lockContact(ctx, tx, workspaceID, id)
	if err != nil {
		return TagChange{}, notFound(err, errContactNotFound)
	}
	want := slices.Clone(c.Tags)
	for _, t := range add {
		if !slices.Contains(want, t) {
			want = append(want, t)
		}
	}
	want = slices.DeleteFunc(want, func(t string) bool { return slices.Contains(remove, t) })
	return s.setTagsTx(ctx, tx, &c, want, s.clock.Now())
}

// PatchAttributesTx merge-patches a contact's attributes in the caller's
// transaction and returns the names that changed.
func (s *Service) PatchAttributesTx(ctx context.Context, tx *store.Tx, workspaceID, id string, patch map[string]*string) ([]string, error) {
	if err := checkPatch(patch, 1); err != nil {
		return nil, err
	}
	c, err := lockContact(ctx, tx, workspaceID, id)
	if err != nil {
		return nil, notFound(err, errContactNotFound)
	}
	attrs, changed := MergePatch(c.Attributes, patch)
	if len(changed) == 0 {
		return changed, nil
	}
	c.Attributes, c.UpdatedAt = attrs, s.clock.Now()
	return changed, updateContact(ctx, tx, c)
}
