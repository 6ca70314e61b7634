// Package segments serves the segments routes: named rule sets (see
// internal/rules) over an audience's members or every contact of the
// workspace. Membership is computed when read, never stored; the member
// count is cached and recomputed on demand.
package segments

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/ids"
	"mailroom/internal/rules"
	"mailroom/internal/store"
)

// Segment is one stored segment.
type Segment struct {
	ID          string
	WorkspaceID string
	AudienceID  string // "" for a workspace-wide segment
	Name        string
	Description string
	Match       string
	MemberCount int
	CountedAt   time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	rawRules    string
	set         *rules.Set
}

// Rules are the segment's rules as stored.
func (s Segment) Rules() []rules.Rule {
	var rs []rules.Rule
	_ = json.Unmarshal([]byte(s.rawRules), &rs)
	if rs == nil {
		rs = []rules.Rule{}
	}
	return rs
}

// Describes is the sentence saying who the segment holds.
func (s Segment) Describes() string { return s.set.Describe(s.AudienceID != "") }

// Set is the parsed rule set.
func (s Segment) Set() *rules.Set { return s.set }

// Service serves segments.
type Service struct {
	db       *store.DB
	clock    clock.Clock
	contacts *contacts.Service
	optedOut OptedOut // nil: nobody opted out of a topic
}

// New builds the service over the contacts area, which holds the people.
func New(db *store.DB, c clock.Clock, cs *contacts.Service) *Service {
	return &Service{db: db, clock: c, contacts: cs}
}

// Input is a segment to create; Rules is the raw JSON array (nil: none).
type Input struct {
	Name        string
	AudienceID  string
	Match       string
	Rules       json.RawMessage
	Description string
}

// Patch changes a segment; nil fields are untouched, and Rules replaces
// the whole list.
type Patch struct {
	Name        *string
	Description *string
	Match       *string
	Rules       json.RawMessage
}

func errNotFound() error { return apierr.NotFound("segment") }

func parse(match string, raw json.RawMessage, withAudience bool) (*rules.Set, string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("[]")
	}
	set, err := rules.ParseJSON(match, raw, withAudience)
	if err != nil {
		return nil, "", err
	}
	return set, string(set.JSON()), nil
}

func checkText(field, v string, max int) error {
	if utf8.RuneCountInString(v) > max {
		return apierr.InvalidRequest("%s is longer than %d characters.", field, max)
	}
	return nil
}

// Create stores a segment and counts it.
func (s *Service) Create(ctx context.Context, workspaceID string, in Input) (Segment, error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" {
		return Segment{}, apierr.InvalidRequest("name is required.")
	}
	if err := errors.Join(checkText("name", in.Name, 200), checkText("description", in.Description, 1000)); err != nil {
		return Segment{}, apierr.InvalidRequest("%s", err.Error())
	}
	if in.AudienceID != "" {
		if _, err := s.contacts.Audience(ctx, workspaceID, in.AudienceID); err != nil {
			return Segment{}, err
		}
	}
	set, raw, err := parse(in.Match, in.Rules, in.AudienceID != "")
	if err != nil {
		return Segment{}, err
	}
	now := s.clock.Now()
	seg := Segment{ID: ids.New("seg"), WorkspaceID: workspaceID, AudienceID: in.AudienceID, Name: in.Name, Description: in.Description,
		Match: set.Mode, rawRules: raw, set: set, CountedAt: now, CreatedAt: now, UpdatedAt: now}
	if seg.MemberCount, err = s.count(ctx, seg); err != nil {
		return Segment{}, err
	}
	if err := insertSegment(ctx, s.db, seg); err != nil {
		return Segment{}, err
	}
	return seg, nil
}

func (s *Service) load(ctx context.Context, workspaceID, id string) (Segment, error) {
	seg, err := segmentByID(ctx, s.db, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return seg, errNotFound()
	}
	if err != nil {
		return seg, err
	}
	// Stored rules were checked when written.
	seg.set, _, err = parse(seg.Match, json.RawMessage(seg.rawRules), seg.AudienceID != "")
	return seg, err
}

// Get reads a segment; live recounts its members and caches the count.
func (s *Service) Get(ctx context.Context, workspaceID, id string, live bool) (Segment, error) {
	seg, err := s.load(ctx, workspaceID, id)
	if err != nil || !live {
		return seg, err
	}
	n, err := s.count(ctx, seg)
	if err != nil {
		return seg, err
	}
	seg.MemberCount, seg.CountedAt = n, s.clock.Now()
	return seg, setCount(ctx, s.db, workspaceID, id, n, seg.CountedAt)
}

// List reads the workspace's segments, newest first, optionally of one
// audience.
func (s *Service) List(ctx context.Context, workspaceID, audienceID string) ([]Segment, error) {
	segs, err := listSegments(ctx, s.db, workspaceID, audienceID)
	if err != nil {
		return nil, err
	}
	for i := range segs {
		segs[i].set, _, _ = parse(segs[i].Match, json.RawMessage(segs[i].rawRules), segs[i].AudienceID != "")
	}
	return segs, nil
}

// Update applies a patch (rules replaced wholesale) and recounts.
func (s *Service) Update(ctx context.Context, workspaceID, id string, p Patch) (Segment, error) {
	seg, err := s.load(ctx, workspaceID, id)
	if err != nil {
		return seg, err
	}
	if p.Name != nil {
		n := strings.TrimSpace(*p.Name)
		if n == "" {
			return seg, apierr.InvalidRequest("name cannot be empty.")
		}
		if err := checkText("name", n, 200); err != nil {
			return seg, apierr.InvalidRequest("%s", err.Error())
		}
		seg.Name = n
	}
	if p.Description != nil {
		if err := checkText("description", *p.Description, 1000); err != nil {
			return seg, apierr.InvalidRequest("%s", err.Error())
		}
		seg.Description = *p.Description
	}
	match, raw := seg.Match, json.RawMessage(seg.rawRules)
	if p.Match != nil {
		match = *p.Match
	}
	if p.Rules != nil {
		raw = p.Rules
	}
	if seg.set, seg.rawRules, err = parse(match, raw, seg.AudienceID != ""); err != nil {
		return seg, err
	}
	seg.Match = seg.set.Mode
	now := s.clock.Now()
	if seg.MemberCount, err = s.count(ctx, seg); err != nil {
		return seg, err
	}
	seg.CountedAt, seg.UpdatedAt = now, now
	return seg, updateSegment(ctx, s.db, seg)
}

// Delete removes a segment; its contacts are untouched.
func (s *Service) Delete(ctx context.Context, workspaceID, id string) error {
	ok, err := deleteSegment(ctx, s.db, workspaceID, id)
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound()
	}
	return nil
}

// people is who the segment holds: its audience's members (or the
// workspace's contacts) its rules select.
func (s *Service) people(seg Segment) contacts.PeopleQuery {
	return s.contacts.People(seg.WorkspaceID).WithAudience(seg.AudienceID).WithRules(seg.set)
}

func (s *Service) count(ctx context.Context, seg Segment) (int, error) {
	return s.people(seg).Count(ctx)
}

// Lookup reads a segment (for broadcasts).
func (s *Service) Lookup(ctx context.Context, workspaceID, id string) (Segment, error) {
	return s.load(ctx, workspaceID, id)
}

// Members reads a page of the segment's members in a stable order after
// the contact id after, and the total of the listing.
func (s *Service) Members(ctx context.Context, workspaceID, id string, mailable bool, after string, limit int) ([]contacts.Person, int, error) {
	seg, err := s.load(ctx, workspaceID, id)
	if err != nil {
		return nil, 0, err
	}
	q := s.people(seg)
	if mailable {
		q = q.WithReach(contacts.Mailable)
	}
	ps, err := q.After(after).WithLimit(limit).List(ctx)
	if err != nil {
		return nil, 0, err
	}
	total, err := q.Count(ctx)
	return ps, total, err
}
