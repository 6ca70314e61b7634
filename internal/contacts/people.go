package contacts

import (
	"context"
	"time"

	"mailroom/internal/rules"
	"mailroom/internal/store"
)

// Why a selection's reason column says a person may not be reached.
const (
	ReasonSuppressed   = "suppressed"
	ReasonUnsubscribed = "unsubscribed"
	ReasonTopicOptOut  = "topic_opt_out"
)

// PeopleQuery selects people: an audience's members, or every contact of
// the workspace, narrowed by its options. It is the one statement over
// people that segments (counts, members), broadcasts (recipients,
// previews, problems) and so the dashboard use, after miniflux's
// EntryQueryBuilder: each With option narrows a copy, and Count, List or
// Snapshot run or hand out one SELECT written in store.go ("people"), the
// only place that says who is suppressed, unsubscribed or opted out of a
// topic. Start one with Service.People.
type PeopleQuery struct {
	db          *store.DB
	now         time.Time
	workspaceID string
	audienceID  string
	rules       *rules.Set
	topic       *TopicOptIn
	email       string
	reach       Reach
	after       string
	limit       int
}

// TopicOptIn is the topic a mail is about, as a selection reads its
// opt-outs (the topics area owns topics and says what they are; contacts
// cannot import it, so the caller copies the three fields).
type TopicOptIn struct {
	ID string
	// DefaultOptIn: everyone gets the topic until they switch it off;
	// false: only those who switched it on.
	DefaultOptIn bool
	// Required: nobody can switch it off.
	Required bool
}

// Reach says which of the selected people a query keeps.
type Reach int

const (
	// Everyone keeps every selected person, reachable or not (a segment's
	// count, a broadcast's snapshot whose reason column tells them apart).
	Everyone Reach = iota
	// Mailable keeps those mail may go to: subscribed (to the audience, or
	// to some live audience for a workspace-wide query), not suppressed,
	// and not opted out of the query's topic.
	Mailable
)

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

// People starts a query over the workspace's contacts on this service's
// database; rules that read time read it now.
func (s *Service) People(workspaceID string) PeopleQuery {
	return PeopleQuery{db: s.db, now: s.clock.Now(), workspaceID: workspaceID}
}

// WithAudience keeps the audience's members (the caller has checked the
// audience); "" keeps every contact of the workspace.
func (q PeopleQuery) WithAudience(id string) PeopleQuery { q.audienceID = id; return q }

// WithRules keeps those a segment's rules select; nil keeps everyone.
func (q PeopleQuery) WithRules(set *rules.Set) PeopleQuery { q.rules = set; return q }

// WithTopic makes the mail's topic count: those opted out of it get the
// reason topic_opt_out, and Mailable leaves them out.
func (q PeopleQuery) WithTopic(t TopicOptIn) PeopleQuery { q.topic = &t; return q }

// WithEmail keeps only the person of that normalized address.
func (q PeopleQuery) WithEmail(email string) PeopleQuery { q.email = email; return q }

// WithReach keeps everyone or only the mailable (Reach).
func (q PeopleQuery) WithReach(r Reach) PeopleQuery { q.reach = r; return q }

// After starts List after contact id after ("" from the start).
func (q PeopleQuery) After(contactID string) PeopleQuery { q.after = contactID; return q }

// WithLimit makes List read at most n people; 0 reads all.
func (q PeopleQuery) WithLimit(n int) PeopleQuery { q.limit = n; return q }

// Count counts the people the query keeps (paging aside).
func (q PeopleQuery) Count(ctx context.Context) (int, error) { return countPeople(ctx, q.db, q) }

// List reads the people the query keeps in contact id order, a page as
// After and WithLimit say.
func (q PeopleQuery) List(ctx context.Context) ([]Person, error) { return listPeople(ctx, q.db, q) }

// scanPerson reads a row of personColumns, and within an audience the
// membership's id, status, attributes and created_at.
func scanPerson(inAudience bool) func(sc scanner) (Person, error) {
	return func(sc scanner) (Person, error) {
		var p Person
		var attrs, tags, mattrs string
		var created, joined int64
		dest := []any{&p.ContactID, &p.Email, &p.FirstName, &p.LastName, &attrs, &tags, &created}
		if inAudience {
			dest = append(dest, &p.MemberID, &p.Status, &mattrs, &joined)
		}
		if err := sc.Scan(dest...); err != nil {
			return p, err
		}
		p.Attributes, p.Tags, p.CreatedAt = decodeAttrs(attrs), decodeTags(tags), store.FromMillis(created)
		if inAudience {
			p.MemberAttributes, p.JoinedAt = decodeAttrs(mattrs), store.FromMillis(joined)
		}
		return p, nil
	}
}

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
