package contacts

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// Service serves the contacts and audiences routes.
type Service struct {
	db      *store.DB
	clock   clock.Clock
	confirm ConfirmConfig
	// topicsOf lists an address's topics for the subscriptions view.
	topicsOf TopicsOf
	hooks    testHooks
	// stats is held while an import's statistics refresh runs after its
	// answer.
	stats sync.Mutex
	// listened says which contact events an automation of the workspace
	// starts on; nil: every event is queued.
	listened Listened
}

// Listened reads which contact events some enabled automation of a
// workspace starts on (the automations area answers, inside the caller's
// transaction).
type Listened func(ctx context.Context, q store.Querier, workspaceID string) (map[string]bool, error)

// SetListened hands in the automations area's answer; wire before serving.
func (s *Service) SetListened(f Listened) { s.listened = f }

// testHooks are points inside a critical step where a test can hold the
// code to run a race on purpose (export_test.go sets them); nil in
// production.
type testHooks struct {
	importRead func() // Import read the existing contacts and has written nothing yet
}

// New builds the service.
func New(db *store.DB, c clock.Clock) *Service { return &Service{db: db, clock: c} }

// Position is where a newest-first listing continues: strictly older than
// (At, ID). It mirrors the API's opaque cursor.
type Position struct {
	At int64 // created_at in unix ms
	ID string
}

// ListFilter narrows the contacts listing; empty fields match everything.
type ListFilter struct {
	Q      string // substring of the address or the names, without case
	Lookup string // exact normalized address
}

// NewContact is a contact to create; Email is already normalized.
type NewContact struct {
	Email      string
	FirstName  string
	LastName   string
	Attributes map[string]string
	Tags       []string
}

// ContactPatch changes a contact; nil fields are untouched. Attributes is a
// merge patch; Tags replaces the set.
type ContactPatch struct {
	Email      *string
	FirstName  *string
	LastName   *string
	Attributes map[string]*string
	Tags       *[]string
}

// AutomationEvent is one durable trigger row queued by a change.
type AutomationEvent struct {
	ID          string
	WorkspaceID string
	Kind        string
	ContactID   string
	Data        map[string]any
	CreatedAt   time.Time
}

func errContactNotFound() error { return apierr.NotFound("contact") }

func errContactExists(email string) error {
	return apierr.Conflict("contact_exists", "A contact with the address %s already exists.", email).
		WithNext("Change it with PATCH /v1/contacts/{id}; find it with GET /v1/contacts?lookup=<address>.")
}

func notFound(err error, mk func() error) error {
	if errors.Is(err, store.ErrNotFound) {
		return mk()
	}
	return err
}

// Create adds a contact. A tag given at creation queues tag.added like any
// later change.
func (s *Service) Create(ctx context.Context, workspaceID string, in NewContact) (Contact, error) {
	tags, err := NormalizeTags(in.Tags)
	if err != nil {
		return Contact{}, err
	}
	patch := make(map[string]*string, len(in.Attributes))
	for k, v := range in.Attributes {
		patch[k] = &v
	}
	if err := checkPatch(patch, 0); err != nil {
		return Contact{}, err
	}
	if err := checkName("first_name", in.FirstName); err != nil {
		return Contact{}, err
	}
	if err := checkName("last_name", in.LastName); err != nil {
		return Contact{}, err
	}
	now := s.clock.Now()
	c := Contact{ID: newContactID(), WorkspaceID: workspaceID, Email: in.Email, FirstName: in.FirstName, LastName: in.LastName,
		Attributes: map[string]string{}, Tags: []string{}, CreatedAt: now, UpdatedAt: now}
	for k, v := range in.Attributes {
		c.Attributes[k] = v
	}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if _, err := contactByEmail(ctx, tx, workspaceID, c.Email); err == nil {
			return errContactExists(c.Email)
		}
		if err := insertContact(ctx, tx, c); err != nil {
			if store.IsUniqueViolation(err) {
				return errContactExists(c.Email)
			}
			return err
		}
		if err := insertEvent(ctx, tx, workspaceID, EventContactCreated, c.ID, createdData(c), now); err != nil {
			return err
		}
		_, err := s.setTagsTx(ctx, tx, &c, tags, now)
		return err
	})
	if err != nil {
		return Contact{}, err
	}
	return c, nil
}

// Get reads one contact of the workspace.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (Contact, error) {
	c, err := contactByID(ctx, s.db, workspaceID, id)
	return c, notFound(err, errContactNotFound)
}

// List returns up to limit contacts matching f, newest first after pos.
func (s *Service) List(ctx context.Context, workspaceID string, f ListFilter, limit int, pos *Position) ([]Contact, error) {
	return listContacts(ctx, s.db, workspaceID, f, limit, pos)
}

// Update applies a patch to one contact.
func (s *Service) Update(ctx context.Context, workspaceID, id string, p ContactPatch) (Contact, error) {
	if p.Attributes != nil {
		if err := checkPatch(p.Attributes, 0); err != nil {
			return Contact{}, err
		}
	}
	var tags []string
	if p.Tags != nil {
		var err error
		if tags, err = NormalizeTags(*p.Tags); err != nil {
			return Contact{}, err
		}
	}
	for field, v := range map[string]*string{"first_name": p.FirstName, "last_name": p.LastName} {
		if v != nil {
			if err := checkName(field, *v); err != nil {
				return Contact{}, err
			}
		}
	}
	var c Contact
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if c, err = lockContact(ctx, tx, workspaceID, id); err != nil {
			return notFound(err, errContactNotFound)
		}
		now := s.clock.Now()
		if p.Email != nil && *p.Email != c.Email {
			if _, err := contactByEmail(ctx, tx, workspaceID, *p.Email); err == nil {
				return errContactExists(*p.Email)
			}
			c.Email = *p.Email
		}
		if p.FirstName != nil {
			c.FirstName = *p.FirstName
		}
		if p.LastName != nil {
			c.LastName = *p.LastName
		}
		if p.Attributes != nil {
			c.Attributes, _ = MergePatch(c.Attributes, p.Attributes)
		}
		if p.Tags != nil {
			if _, err := s.setTagsTx(ctx, tx, &c, tags, now); err != nil {
				return err
			}
		}
		c.UpdatedAt = now
		if err := updateContact(ctx, tx, c); err != nil {
			if store.IsUniqueViolation(err) {
				return errContactExists(c.Email)
			}
			return err
		}
		return nil
	})
	return c, err
}

// Delete removes a contact and its memberships.
func (s *Service) Delete(ctx context.Context, workspaceID, id string) error {
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		found, err := deleteContact(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		if !found {
			return errContactNotFound()
		}
		return nil
	})
}

// TagChange is the answer of a tag change: the contact's tags after it and
// what this call really changed (a repeat changes nothing).
type TagChange struct {
	Tags    []string
	Added   []string
	Removed []string
}

// setTagsTx makes want (normalized) the contact's tag set, queueing one
// automation event per real change in tx, and writes the contact when
// something changed.
func (s *Service) setTagsTx(ctx context.Context, tx *store.Tx, c *Contact, want []string, now time.Time) (TagChange, error) {
	ch := TagChange{Added: []string{}, Removed: []string{}}
	for _, t := range want {
		if !slices.Contains(c.Tags, t) {
			ch.Added = append(ch.Added, t)
		}
	}
	for _, t := range c.Tags {
		if !slices.Contains(want, t) {
			ch.Removed = append(ch.Removed, t)
		}
	}
	slices.Sort(ch.Added)
	slices.Sort(ch.Removed)
	for _, t := range ch.Added {
		if err := insertEvent(ctx, tx, c.WorkspaceID, EventTagAdded, c.ID, map[string]any{"tag": t, "email": c.Email}, now); err != nil {
			return ch, err
		}
	}
	for _, t := range ch.Removed {
		if err := insertEvent(ctx, tx, c.WorkspaceID, EventTagRemoved, c.ID, map[string]any{"tag": t, "email": c.Email}, now); err != nil {
			return ch, err
		}
	}
	c.Tags = slices.Clone(want)
	slices.Sort(c.Tags)
	ch.Tags = c.Tags
	if len(ch.Added)+len(ch.Removed) > 0 {
		c.UpdatedAt = now
		if err := updateContact(ctx, tx, *c); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// changeTags locks the contact and applies fn's new tag set.
func (s *Service) changeTags(ctx context.Context, workspaceID, id string, fn func(cur []string) []string) (TagChange, error) {
	var ch TagChange
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		c, err := lockContact(ctx, tx, workspaceID, id)
		if err != nil {
			return notFound(err, errContactNotFound)
		}
		ch, err = s.setTagsTx(ctx, tx, &c, fn(slices.Clone(c.Tags)), s.clock.Now())
		return err
	})
	return ch, err
}

// AddTags adds tags (1 to 100) to a contact.
func (s *Service) AddTags(ctx context.Context, workspaceID, id string, tags []string) (TagChange, error) {
	if len(tags) == 0 || len(tags) > MaxTagsPerChange {
		return TagChange{}, apierr.InvalidRequest("Send 1 to %d tags as tags (an array) or one as tag.", MaxTagsPerChange)
	}
	norm, err := NormalizeTags(tags)
	if err != nil {
		return TagChange{}, err
	}
	return s.changeTags(ctx, workspaceID, id, func(cur []string) []string {
		for _, t := range norm {
			if !slices.Contains(cur, t) {
				cur = append(cur, t)
			}
		}
		return cur
	})
}

// RemoveTag removes one tag; removing a tag the contact lacks changes nothing.
func (s *Service) RemoveTag(ctx context.Context, workspaceID, id, tag string) (TagChange, error) {
	norm, err := NormalizeTag(tag)
	if err != nil {
		return TagChange{}, err
	}
	return s.changeTags(ctx, workspaceID, id, func(cur []string) []string {
		return slices.DeleteFunc(cur, func(t string) bool { return t == norm })
	})
}

// PatchAttributes merge-patches a contact's attributes (1 to 100 names) and
// returns them with the names that really changed.
func (s *Service) PatchAttributes(ctx context.Context, workspaceID, id string, patch map[string]*string) (map[string]string, []string, error) {
	if err := checkPatch(patch, 1); err != nil {
		return nil, nil, err
	}
	var attrs map[string]string
	var changed []string
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		c, err := lockContact(ctx, tx, workspaceID, id)
		if err != nil {
			return notFound(err, errContactNotFound)
		}
		attrs, changed = MergePatch(c.Attributes, patch)
		if len(changed) == 0 {
			return nil
		}
		c.Attributes, c.UpdatedAt = attrs, s.clock.Now()
		return updateContact(ctx, tx, c)
	})
	return attrs, changed, err
}

// AutomationEvents lists the automation events queued for a contact, oldest
// first (the automations area consumes them; tests read them here).
func (s *Service) AutomationEvents(ctx context.Context, workspaceID, contactID string) ([]AutomationEvent, error) {
	return listEvents(ctx, s.db, workspaceID, contactID)
}

func newContactID() string { return ids.New("ct") }
