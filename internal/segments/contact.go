package segments

import (
	"context"
	"maps"

	"mailroom/internal/apierr"
	"mailroom/internal/contacts"
	"mailroom/internal/rules"
	"mailroom/internal/suppressions"
)

// OptedOut lists the topics (ids and keys) an address of the workspace is
// not subscribed to, as the rule `topic` reads them (the topics area
// answers; app hands it in).
type OptedOut func(ctx context.Context, workspaceID, email string) ([]string, error)

// SetOptedOut hands in the topics area's answer; wire before serving.
func (s *Service) SetOptedOut(f OptedOut) { s.optedOut = f }

// OfContact lists the workspace's segments whose rules the contact meets,
// newest first: each set is evaluated by rules' Match on the contact (with
// its membership, for a segment of an audience it belongs to), as the
// members listing's SQL would select it.
func (s *Service) OfContact(ctx context.Context, workspaceID, contactID string) ([]Segment, error) {
	c, err := s.contacts.Get(ctx, workspaceID, contactID)
	if err != nil {
		return nil, err
	}
	segs, err := s.List(ctx, workspaceID, "")
	if err != nil {
		return nil, err
	}
	p := rules.Person{Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Attributes: c.Attributes, Tags: c.Tags, CreatedAt: c.CreatedAt}
	sup, err := suppressions.Suppressed(ctx, s.db, workspaceID, []string{c.Email})
	if err != nil {
		return nil, err
	}
	p.Suppressed = sup[c.Email] != ""
	if s.optedOut != nil {
		if p.OptedOut, err = s.optedOut(ctx, workspaceID, c.Email); err != nil {
			return nil, err
		}
	}
	now := s.clock.Now()
	out := []Segment{}
	for _, seg := range segs {
		if seg.set == nil {
			continue
		}
		q := p
		if seg.AudienceID != "" {
			m, err := contacts.MemberIn(ctx, s.db, seg.AudienceID, c.ID)
			if apierr.Is(err, "not_found") {
				continue // not a member: outside the segment
			}
			if err != nil {
				return nil, err
			}
			q.Status, q.JoinedAt = m.Status, m.CreatedAt
			q.Attributes = maps.Clone(c.Attributes)
			maps.Copy(q.Attributes, m.Attributes) // merge fields over the contact's, as segments read them
		}
		if seg.set.Match(q, now) {
			out = append(out, seg)
		}
	}
	return out, nil
}
