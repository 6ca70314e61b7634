package topics

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/ids"
	"mailroom/internal/secretbox"
	"mailroom/internal/store"
)

// Contacts is what an unsubscribe from everything records on the contact:
// its memberships become unsubscribed (the contacts area owns them), with
// no event that could subscribe the address again.
type Contacts interface {
	UnsubscribeEverywhere(ctx context.Context, workspaceID, email string) (int, error)
}

// LinkConfig is what the links need; set by the app.
type LinkConfig struct {
	Box                *secretbox.Box // MAILROOM_SECRET_KEY: signs the links
	PublicURL          string         // MAILROOM_PUBLIC_URL, without a trailing slash
	UnsubscribeAddress string         // the mailto address, unsubscribe@<service domain>
}

// Service serves the topic routes, the send path's topic check and the
// hosted pages.
type Service struct {
	db       *store.DB
	clock    clock.Clock
	links    LinkConfig
	contacts Contacts
}

// New builds the service.
func New(db *store.DB, c clock.Clock, links LinkConfig, ct Contacts) *Service {
	if c == nil {
		c = clock.Real{}
	}
	return &Service{db: db, clock: c, links: links, contacts: ct}
}

func errNotFound() error { return apierr.NotFound("topic") }

func errTopicNotFound(ref string) error {
	return apierr.New(apierr.StatusNotFound, "topic_not_found", "No topic %q on this workspace.", apierr.Clip(ref, 80)).
		WithNext("List the topics with GET /v1/topics.")
}

// NewTopic is POST /v1/topics.
type NewTopic struct {
	Name         string
	Key          string // "" derives it from Name
	Description  string
	DefaultOptIn *bool // default true
	Required     *bool // default false
}

// Patch is PATCH /v1/topics/{id}: everything but the key. Archived false
// restores an archived topic.
type Patch struct {
	Name         *string
	Description  *string
	DefaultOptIn *bool
	Required     *bool
	Archived     *bool
}

func checkName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > MaxNameLen || hasControl(name) {
		return apierr.InvalidRequest("name must be 1 to %d characters without line breaks or control characters.", MaxNameLen)
	}
	return nil
}

func checkDescription(d string) error {
	if len(d) > MaxDescriptionLen || strings.ContainsAny(d, "\x00") {
		return apierr.InvalidRequest("description must be at most %d characters.", MaxDescriptionLen)
	}
	return nil
}

// Create adds a topic. A derived key that is taken gets a suffix; a given
// key that is taken (archived topics keep theirs) answers 409 topic_exists.
func (s *Service) Create(ctx context.Context, workspaceID string, in NewTopic) (Topic, error) {
	if err := checkName(in.Name); err != nil {
		return Topic{}, err
	}
	if err := checkDescription(in.Description); err != nil {
		return Topic{}, err
	}
	if in.Key != "" && !ValidKey(in.Key) {
		return Topic{}, apierr.InvalidRequest("key %q must be %d to %d lowercase letters, digits and hyphens.", apierr.Clip(in.Key, 80), MinKeyLen, MaxKeyLen).
			WithNext("Omit key to derive it from the name.")
	}
	now := s.clock.Now()
	t := Topic{ID: ids.New("top"), WorkspaceID: workspaceID, Key: in.Key, Name: in.Name, Description: in.Description,
		DefaultOptIn: in.DefaultOptIn == nil || *in.DefaultOptIn, Required: in.Required != nil && *in.Required,
		CreatedAt: now, UpdatedAt: now}
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		if in.Key != "" {
			taken, err := keyTaken(ctx, tx, workspaceID, in.Key)
			if err != nil {
				return err
			}
			if taken {
				return errKeyTaken(in.Key)
			}
		} else {
			base := KeyFromName(in.Name)
			for n := 1; ; n++ {
				t.Key = base
				if n > 1 {
					t.Key = fmt.Sprintf("%s-%d", base, n)
				}
				taken, err := keyTaken(ctx, tx, workspaceID, t.Key)
				if err != nil {
					return err
				}
				if !taken {
					break
				}
				if n > 1000 {
					return errKeyTaken(base)
				}
			}
		}
		if err := insertTopic(ctx, tx, t); err != nil {
			if store.IsUniqueViolation(err) {
				return errKeyTaken(t.Key)
			}
			return err
		}
		return nil
	})
	return t, err
}

func errKeyTaken(key string) error {
	return apierr.Conflict("topic_exists", "A topic with the key %q already exists on this workspace (archived topics keep their keys).", key).
		WithNext("Choose another key, or restore the archived topic with PATCH {\"archived\": false}.")
}

// Get reads a topic by id or key, archived or not.
func (s *Service) Get(ctx context.Context, workspaceID, ref string) (Topic, error) {
	t, err := topicByRef(ctx, s.db, workspaceID, ref)
	if errors.Is(err, store.ErrNotFound) {
		return Topic{}, errNotFound()
	}
	return t, err
}

// List reads the workspace's topics, oldest first; archived ones only when
// asked.
func (s *Service) List(ctx context.Context, workspaceID string, includeArchived bool) ([]Topic, error) {
	return listTopics(ctx, s.db, workspaceID, includeArchived)
}

// Update applies a patch.
func (s *Service) Update(ctx context.Context, workspaceID, ref string, p Patch) (Topic, error) {
	if p.Name != nil {
		if err := checkName(*p.Name); err != nil {
			return Topic{}, err
		}
	}
	if p.Description != nil {
		if err := checkDescription(*p.Description); err != nil {
			return Topic{}, err
		}
	}
	var t Topic
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if t, err = topicByRef(ctx, tx, workspaceID, ref); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return errNotFound()
			}
			return err
		}
		now := s.clock.Now()
		if p.Name != nil {
			t.Name = *p.Name
		}
		if p.Description != nil {
			t.Description = *p.Description
		}
		if p.DefaultOptIn != nil {
			t.DefaultOptIn = *p.DefaultOptIn
		}
		if p.Required != nil {
			t.Required = *p.Required
		}
		if p.Archived != nil {
			switch {
			case *p.Archived && t.ArchivedAt == nil:
				t.ArchivedAt = &now
			case !*p.Archived:
				t.ArchivedAt = nil
			}
		}
		t.UpdatedAt = now
		return updateTopic(ctx, tx, t)
	})
	return t, err
}

// Archive retires a topic (the spec's DELETE): it leaves the listing and
// the preference pages, and a send naming it answers topic_not_found. Its
// preferences stay on record. Archiving twice changes nothing.
func (s *Service) Archive(ctx context.Context, workspaceID, ref string) (Topic, error) {
	yes := true
	return s.Update(ctx, workspaceID, ref, Patch{Archived: &yes})
}

// NormalizeEmail checks an address and returns its stored form.
func NormalizeEmail(email string) (string, error) {
	if strings.TrimSpace(email) == "" {
		return "", apierr.InvalidRequest("email is required.")
	}
	e, err := contacts.NormalizeEmail(email)
	if err != nil {
		return "", apierr.InvalidRequest("email %q is not a valid address: it %s.", apierr.Clip(email, 80), err.Error())
	}
	return e, nil
}

// preferences reads an address's standing on the live topics (only the
// one named by topicID when it is not "").
func preferences(ctx context.Context, q store.Querier, workspaceID, email, topicID string) ([]Preference, error) {
	ts, err := listTopics(ctx, q, workspaceID, false)
	if err != nil {
		return nil, err
	}
	rows, err := preferencesOf(ctx, q, workspaceID, email)
	if err != nil {
		return nil, err
	}
	out := make([]Preference, 0, len(ts))
	for _, t := range ts {
		if topicID != "" && t.ID != topicID {
			continue
		}
		p := Preference{Topic: t, Subscribed: t.DefaultOptIn}
		if r, ok := rows[t.ID]; ok {
			at := r.updatedAt
			p.Subscribed, p.Source, p.UpdatedAt = r.subscribed, r.source, &at
		}
		if t.Required {
			p.Subscribed = true
		}
		out = append(out, p)
	}
	return out, nil
}

// OptedOut lists the live topics (ids and keys) email is not subscribed
// to, as the segment rule `topic` reads them, through q: another area's
// transaction when it evaluates the rule on one contact (an automation's
// if step) must see what it reads.
func OptedOut(ctx context.Context, q store.Querier, workspaceID, email string) ([]string, error) {
	ps, err := preferences(ctx, q, workspaceID, strings.ToLower(email), "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ps {
		if !p.Subscribed {
			out = append(out, p.Topic.ID, p.Topic.Key)
		}
	}
	return out, nil
}

// liveTopic reads a topic named on a request by key or id: archived or
// missing answers 404 topic_not_found.
func liveTopic(ctx context.Context, q store.Querier, workspaceID, ref string) (Topic, error) {
	t, err := topicByRef(ctx, q, workspaceID, ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && t.Archived()) {
		return Topic{}, errTopicNotFound(ref)
	}
	return t, err
}

// Preferences answers GET /v1/topics/preferences, and the POST that only
// asks: the address's standing on every live topic, or on one.
func (s *Service) Preferences(ctx context.Context, workspaceID, email, topicRef string) (Preferences, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return Preferences{}, err
	}
	topicID := ""
	if topicRef != "" {
		t, err := liveTopic(ctx, s.db, workspaceID, topicRef)
		if err != nil {
			return Preferences{}, err
		}
		topicID = t.ID
	}
	ps, err := preferences(ctx, s.db, workspaceID, e, topicID)
	if err != nil {
		return Preferences{}, err
	}
	return Preferences{Email: e, PreferenceURL: s.PreferenceURL(workspaceID, e, s.clock.Now().Add(LinkTTL)), Preferences: ps}, nil
}

// SetPreference writes an address's choice: for one topic, or, with no
// topic, for every live topic that is not required (subscribed false is
// then "unsubscribe from all", which also unsubscribes the contact's
// memberships). Switching a required topic off answers 422 topic_required.
// The answer is the address's standing afterwards.
func (s *Service) SetPreference(ctx context.Context, workspaceID, email, topicRef string, subscribed bool, source string) (Preferences, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return Preferences{}, err
	}
	if source == "" {
		source = SourceAPI
	}
	if len(source) > MaxSourceLen || hasControl(source) {
		return Preferences{}, apierr.InvalidRequest("source must be at most %d characters without control characters.", MaxSourceLen)
	}
	topicID := ""
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		now := s.clock.Now()
		if topicRef != "" {
			t, err := liveTopic(ctx, tx, workspaceID, topicRef)
			if err != nil {
				return err
			}
			if t.Required && !subscribed {
				return apierr.Invalid422("topic_required", "The topic %q is required and cannot be switched off.", t.Key)
			}
			topicID = t.ID
			return setPreference(ctx, tx, workspaceID, t.ID, e, subscribed, source, now)
		}
		ts, err := listTopics(ctx, tx, workspaceID, false)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if t.Required {
				continue
			}
			if err := setPreference(ctx, tx, workspaceID, t.ID, e, subscribed, source, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Preferences{}, err
	}
	if topicRef == "" && !subscribed {
		if err := s.unsubscribeContact(ctx, workspaceID, e); err != nil {
			return Preferences{}, err
		}
	}
	return s.Preferences(ctx, workspaceID, e, topicID)
}

func (s *Service) unsubscribeContact(ctx context.Context, workspaceID, email string) error {
	if s.contacts == nil {
		return nil
	}
	_, err := s.contacts.UnsubscribeEverywhere(ctx, workspaceID, email)
	return err
}

// ForSend checks a send's topic (key or id) for its recipients: a missing
// or archived topic answers 404 topic_not_found, a recipient who switched
// it off (or never opted in to a topic that is off by default) 422
// topic_opt_out, and nothing is sent. It answers the topic's id and the
// headers the message carries: List-Unsubscribe (the one-click link and
// the mailto, for the first recipient: delivery writes each recipient's
// own in a message of its own) and List-Unsubscribe-Post (RFC 8058). A required topic cannot be switched off, so its mail carries no
// unsubscribe headers.
func (s *Service) ForSend(ctx context.Context, workspaceID, ref string, recipients []string) (string, map[string]string, error) {
	t, emails, err := s.optedIn(ctx, s.db, workspaceID, ref, recipients)
	if err != nil || t.Required || len(emails) == 0 || s.links.Box == nil {
		return t.ID, nil, err
	}
	return t.ID, map[string]string{
		"List-Unsubscribe":      s.ListUnsubscribe(workspaceID, t.ID, emails[0]),
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
	}, nil
}

// CheckDue checks a scheduled send's topic again when it is due, in the
// promoting transaction: the same answers as ForSend (topic_not_found once
// the topic is archived, topic_opt_out once a recipient switched it off).
func (s *Service) CheckDue(ctx context.Context, q store.Querier, workspaceID, topicID string, recipients []string) error {
	_, _, err := s.optedIn(ctx, q, workspaceID, topicID, recipients)
	return err
}

// optedIn is the one check of a send's topic: the live topic ref names, and
// every recipient (lowercased, returned) subscribed to it, by choice or by
// the topic's default; a required topic reaches everyone.
func (s *Service) optedIn(ctx context.Context, q store.Querier, workspaceID, ref string, recipients []string) (Topic, []string, error) {
	t, err := liveTopic(ctx, q, workspaceID, ref)
	if err != nil {
		return Topic{}, nil, err
	}
	if t.Required || len(recipients) == 0 {
		return t, nil, nil
	}
	emails := make([]string, len(recipients))
	for i, r := range recipients {
		emails[i] = strings.ToLower(strings.TrimSpace(r))
	}
	subs, err := subscribedIn(ctx, q, workspaceID, t.ID, emails)
	if err != nil {
		return Topic{}, nil, err
	}
	for i, e := range emails {
		sub, ok := subs[e]
		if !ok {
			sub = t.DefaultOptIn
		}
		if !sub {
			return Topic{}, nil, apierr.Invalid422("topic_opt_out", "%s is not subscribed to the topic %q; nothing was sent.", recipients[i], t.Key).
				WithNext("Do not retry: the recipient chose not to receive this kind of mail.")
		}
	}
	return t, emails, nil
}

// SubscribedKeys lists the keys of the live topics an address is
// subscribed to (its choice, or the topic's default), for the contact's
// subscriptions view.
func (s *Service) SubscribedKeys(ctx context.Context, workspaceID, email string) ([]string, error) {
	ps, err := preferences(ctx, s.db, workspaceID, strings.ToLower(email), "")
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, p := range ps {
		if p.Subscribed {
			out = append(out, p.Topic.Key)
		}
	}
	return out, nil
}
