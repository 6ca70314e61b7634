package contacts

import (
	"context"

	"mailroom/internal/suppressions"
)

// AudienceSubscription is one membership as the subscriptions view shows it.
type AudienceSubscription struct {
	AudienceID   string
	AudienceName string
	MembershipID string
	Status       string
}

// Subscription is one address of a contact: whether it is suppressed and
// where it belongs. A contact has one address today; the list leaves room
// for more.
type Subscription struct {
	Email      string
	Suppressed bool
	Reason     string // the suppression's reason, "" when not suppressed
	Audiences  []AudienceSubscription
	Topics     []string // keys of the live topics subscribed to
}

// Subscriptions is the view of every address of a contact with its
// suppression and its memberships of live audiences.
func (s *Service) Subscriptions(ctx context.Context, workspaceID, contactID string) ([]Subscription, error) {
	c, err := contactByID(ctx, s.db, workspaceID, contactID)
	if err != nil {
		return nil, notFound(err, errContactNotFound)
	}
	sup, err := suppressions.Suppressed(ctx, s.db, workspaceID, []string{c.Email})
	if err != nil {
		return nil, err
	}
	auds, err := audiencesOf(ctx, s.db, workspaceID, c.ID)
	if err != nil {
		return nil, err
	}
	topics := []string{}
	if s.topicsOf != nil {
		if topics, err = s.topicsOf(ctx, workspaceID, c.Email); err != nil {
			return nil, err
		}
	}
	return []Subscription{{Email: c.Email, Suppressed: sup[c.Email] != "", Reason: sup[c.Email], Audiences: auds, Topics: topics}}, nil
}

// TopicsOf lists the keys of the topics an address is subscribed to (the
// topics area answers it; it imports this package, so the app wires it).
type TopicsOf func(ctx context.Context, workspaceID, email string) ([]string, error)

// SetTopics makes the subscriptions view list topics.
func (s *Service) SetTopics(f TopicsOf) { s.topicsOf = f }
