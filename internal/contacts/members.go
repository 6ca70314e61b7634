package contacts

import (
	"context"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/store"
)

// Membership statuses (spec "States and transitions / Membership").
const (
	StatusSubscribed   = "subscribed"
	StatusUnsubscribed = "unsubscribed"
	StatusPending      = "pending"
	StatusCleaned      = "cleaned"
)

// ValidStatus reports whether s is a membership status.
func ValidStatus(s string) bool {
	switch s {
	case StatusSubscribed, StatusUnsubscribed, StatusPending, StatusCleaned:
		return true
	}
	return false
}

func errBadStatus(s string) error {
	return apierr.InvalidRequest("status %q is not one of subscribed, unsubscribed, pending, cleaned.", s)
}

// Member is one contact's membership of an audience; its id is its own.
type Member struct {
	ID           string
	WorkspaceID  string
	AudienceID   string
	ContactID    string
	Email        string
	Status       string
	Attributes   map[string]string
	ConfirmSends int
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// MemberCounts are the audience's totals beside a listing.
type MemberCounts struct {
	Contacts   int // every membership of the audience, whatever its status
	Subscribed int
}

// MemberPatch changes a membership; Subscribed wins over Status.
type MemberPatch struct {
	Attributes map[string]*string
	Subscribed *bool
	Status     *string
}

func errMemberNotFound() error { return apierr.NotFound("member") }

// MemberFilter narrows a members list: by membership status, and by a
// piece of the address (case-insensitive).
type MemberFilter struct {
	Status string
	Email  string
}

// Members lists an audience's memberships newest first: after pos when it
// is set, else from offset.
func (s *Service) Members(ctx context.Context, workspaceID, audienceID string, f MemberFilter, limit, offset int, pos *Position) ([]Member, MemberCounts, error) {
	if f.Status != "" && !ValidStatus(f.Status) {
		return nil, MemberCounts{}, errBadStatus(f.Status)
	}
	if _, err := audienceByID(ctx, s.db, workspaceID, audienceID); err != nil {
		return nil, MemberCounts{}, notFound(err, errAudienceNotFound)
	}
	counts, err := memberCounts(ctx, s.db, audienceID)
	if err != nil {
		return nil, counts, err
	}
	var match *store.Expr
	if e := strings.ToLower(strings.TrimSpace(f.Email)); e != "" {
		m := s.db.HasSubstring(store.Cat("LOWER(c.email)"), e)
		match = &m
	}
	ms, err := listMembers(ctx, s.db, audienceID, f.Status, match, limit, offset, pos)
	return ms, counts, err
}

// Member reads one membership of a live audience.
func (s *Service) Member(ctx context.Context, workspaceID, audienceID, id string) (Member, error) {
	m, err := memberByID(ctx, s.db, workspaceID, audienceID, id)
	return m, notFound(err, errMemberNotFound)
}

// UpdateMember applies a patch: per-list attributes (merge patch), and the
// status, where subscribed true/false wins over status.
func (s *Service) UpdateMember(ctx context.Context, workspaceID, audienceID, id string, p MemberPatch) (Member, error) {
	if p.Attributes != nil {
		if err := checkPatch(p.Attributes, 0); err != nil {
			return Member{}, err
		}
	}
	status := ""
	switch {
	case p.Subscribed != nil && *p.Subscribed:
		status = StatusSubscribed
	case p.Subscribed != nil:
		status = StatusUnsubscribed
	case p.Status != nil:
		if !ValidStatus(*p.Status) {
			return Member{}, errBadStatus(*p.Status)
		}
		status = *p.Status
	}
	var m Member
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if m, err = memberByID(ctx, tx, workspaceID, audienceID, id); err != nil {
			return notFound(err, errMemberNotFound)
		}
		if p.Attributes != nil {
			m.Attributes, _ = MergePatch(m.Attributes, p.Attributes)
		}
		was := m.Status
		if status != "" {
			m.Status = status
		}
		m.UpdatedAt = s.clock.Now()
		if err := updateMember(ctx, tx, m); err != nil {
			return err
		}
		return queueSubscribed(ctx, tx, was, m, m.Email, m.UpdatedAt)
	})
	return m, err
}

// DeleteMember removes a membership without recording an unsubscribe; the
// contact stays.
func (s *Service) DeleteMember(ctx context.Context, workspaceID, audienceID, id string) error {
	if _, err := audienceByID(ctx, s.db, workspaceID, audienceID); err != nil {
		return notFound(err, errAudienceNotFound)
	}
	found, err := deleteMember(ctx, s.db, workspaceID, audienceID, id)
	if err != nil {
		return err
	}
	if !found {
		return errMemberNotFound()
	}
	return nil
}
