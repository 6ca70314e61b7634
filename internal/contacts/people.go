package contacts

import (
	"context"
	"time"

	"mailroom/internal/rules"
	"mailroom/internal/store"
)

// Why PeopleQuery says a person may not be reached.
const (
	ReasonSuppressed   = "suppressed"
	ReasonUnsubscribed = "unsubscribed"
	ReasonTopicOptOut  = "topic_opt_out"
)

// Selection is a set of people: an audience's members (AudienceID) or
// every contact of the workspace, narrowed by rules and, with Mailable,
// to those mail may go to. Build it with Service.Select.
type Selection struct {
	WorkspaceID string
	AudienceID  string
	Rules       *rules.Set // nil: no rule
	Mailable    bool
	// TopicOptOut, when set, is the condition over an address column that
	// the person switched off the mail's topic (the topics area's
	// topics.OptedOutSQL, handed in by the caller since contacts cannot
	// read topics): such people get the reason topic_opt_out, and a
	// Mailable selection leaves them out.
	TopicOptOut func(emailCol string) store.Expr
	// Email, when set, keeps only the person of that normalized address.
	Email     string
	Now       time.Time
	dialect   rules.Dialect
	topicRule TopicRule
}

// Person is one row of a selection: the contact and, within an audience,
// its membership.
type Person struct {
	ContactID        string
	Email            string
	FirstName        string
	LastName         string
	Attributes       map[string]string
	Tags             []string
	CreatedAt        time.Time
	MemberID         string // "" outside an audience
	Status           string
	MemberAttributes map[string]string
	JoinedAt         time.Time
}

// Select builds a selection on this service's database (the audience, if
// any, must have been checked by the caller).
func (s *Service) Select(workspaceID, audienceID string, set *rules.Set, mailable bool) Selection {
	return Selection{WorkspaceID: workspaceID, AudienceID: audienceID, Rules: set, Mailable: mailable, Now: s.clock.Now(), dialect: s.db, topicRule: s.topicRule}
}

// CountPeople counts a selection.
func (s *Service) CountPeople(ctx context.Context, sel Selection) (int, error) {
	return countPeople(ctx, s.db, sel)
}

// People reads up to limit people of a selection after contact id after.
func (s *Service) People(ctx context.Context, sel Selection, after string, limit int) ([]Person, error) {
	return listPeople(ctx, s.db, sel, after, limit)
}

// DB is the service's database, for callers that run PeopleQuery in their
// own statement.
func (s *Service) DB() *store.DB { return s.db }

// Merged is the person's attributes with the membership's merge fields
// over the contact's, as rules and templates read them.
func (p Person) Merged() map[string]string {
	out := make(map[string]string, len(p.Attributes)+len(p.MemberAttributes))
	for k, v := range p.Attributes {
		out[k] = v
	}
	for k, v := range p.MemberAttributes {
		out[k] = v
	}
	return out
}
