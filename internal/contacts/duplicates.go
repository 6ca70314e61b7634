package contacts

import (
	"context"
	"maps"
	"slices"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/store"
)

// Reasons two contacts are likely one person.
const (
	// DupSameAddress: the addresses are one mailbox once case, dots and a
	// +tag in the local part are set aside (and googlemail.com is gmail.com).
	DupSameAddress = "same_address"
	// DupSameNameAndLocal: the same full name and the same local part at
	// different domains (a person's work and private address).
	DupSameNameAndLocal = "same_name_and_local_part"
)

// DuplicatePair is two contacts that are likely one person; A is the older.
type DuplicatePair struct {
	A, B   Contact
	Reason string
}

// canonicalAddress is the mailbox an address most likely reaches.
func canonicalAddress(email string) (local, domain string) {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return email, ""
	}
	local, domain = strings.ToLower(email[:at]), strings.ToLower(email[at+1:])
	if i := strings.IndexByte(local, '+'); i > 0 {
		local = local[:i]
	}
	local = strings.ReplaceAll(local, ".", "")
	if domain == "googlemail.com" {
		domain = "gmail.com"
	}
	return local, domain
}

// Duplicates lists likely duplicate pairs of the workspace, at most limit,
// oldest contacts first; more reports whether pairs were left out.
func (s *Service) Duplicates(ctx context.Context, workspaceID string, limit int) (pairs []DuplicatePair, more bool, err error) {
	all, err := allContacts(ctx, s.db, workspaceID)
	if err != nil {
		return nil, false, err
	}
	byAddr := map[string][]Contact{}
	byName := map[string][]Contact{}
	var keys []string
	for _, c := range all {
		local, domain := canonicalAddress(c.Email)
		k := local + "@" + domain
		if len(byAddr[k]) == 0 {
			keys = append(keys, k)
		}
		byAddr[k] = append(byAddr[k], c)
		if name := strings.ToLower(strings.TrimSpace(c.FirstName + " " + c.LastName)); c.FirstName != "" && c.LastName != "" {
			byName[name+"\x00"+local] = append(byName[name+"\x00"+local], c)
		}
	}
	seen := map[[2]string]bool{}
	add := func(a, b Contact, reason string) {
		key := [2]string{a.ID, b.ID}
		if seen[key] {
			return
		}
		seen[key] = true
		pairs = append(pairs, DuplicatePair{A: a, B: b, Reason: reason})
	}
	for _, k := range keys {
		g := byAddr[k]
		for _, c := range g[1:] {
			add(g[0], c, DupSameAddress)
		}
	}
	for _, g := range byName {
		for _, c := range g[1:] {
			_, d0 := canonicalAddress(g[0].Email)
			if _, d := canonicalAddress(c.Email); d != d0 {
				add(g[0], c, DupSameNameAndLocal)
			}
		}
	}
	slices.SortStableFunc(pairs, func(x, y DuplicatePair) int {
		if c := x.A.CreatedAt.Compare(y.A.CreatedAt); c != 0 {
			return c
		}
		if c := strings.Compare(x.A.ID, y.A.ID); c != 0 {
			return c
		}
		if c := strings.Compare(x.Reason, y.Reason); c != 0 {
			return c
		}
		return strings.Compare(x.B.ID, y.B.ID)
	})
	if len(pairs) > limit {
		return pairs[:limit], true, nil
	}
	return pairs, false, nil
}

// statusRank orders membership statuses for a merge: the stronger wins, so
// an unsubscribe (or a suppression's cleaned) is never undone.
func statusRank(s string) int {
	switch s {
	case StatusUnsubscribed:
		return 3
	case StatusCleaned:
		return 2
	case StatusSubscribed:
		return 1
	}
	return 0
}

// Merge folds loser into survivor: tags are united (each new one queues
// tag.added), attributes and names merge with the survivor winning,
// memberships move over (where both belong, the stronger status wins and
// an unsubscribe stays), the loser's automation history moves too, and the
// loser is removed.
func (s *Service) Merge(ctx context.Context, workspaceID, survivorID, loserID string) (Contact, error) {
	if survivorID == "" || loserID == "" {
		return Contact{}, apierr.InvalidRequest("survivor_id and loser_id are required.")
	}
	if survivorID == loserID {
		return Contact{}, apierr.InvalidRequest("survivor_id and loser_id name the same contact.")
	}
	var sv Contact
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if sv, err = lockContact(ctx, tx, workspaceID, survivorID); err != nil {
			return notFound(err, errContactNotFound)
		}
		lo, err := lockContact(ctx, tx, workspaceID, loserID)
		if err != nil {
			return notFound(err, errContactNotFound)
		}
		now := s.clock.Now()
		attrs := maps.Clone(lo.Attributes)
		maps.Copy(attrs, sv.Attributes)
		sv.Attributes = attrs
		if sv.FirstName == "" && sv.LastName == "" {
			sv.FirstName, sv.LastName = lo.FirstName, lo.LastName
		}
		svMembers, err := contactMemberships(ctx, tx, sv.ID)
		if err != nil {
			return err
		}
		loMembers, err := contactMemberships(ctx, tx, lo.ID)
		if err != nil {
			return err
		}
		for aud, lm := range loMembers {
			sm, both := svMembers[aud]
			if !both {
				if err := moveMembership(ctx, tx, lm.ID, sv.ID, now); err != nil {
					return err
				}
				continue
			}
			if statusRank(lm.Status) > statusRank(sm.Status) {
				sm.Status = lm.Status
			}
			a := maps.Clone(lm.Attributes)
			maps.Copy(a, sm.Attributes)
			sm.Attributes, sm.UpdatedAt = a, now
			if err := updateMember(ctx, tx, sm); err != nil {
				return err
			}
			if _, err := deleteMember(ctx, tx, workspaceID, aud, lm.ID); err != nil {
				return err
			}
		}
		if err := moveEvents(ctx, tx, lo.ID, sv.ID); err != nil {
			return err
		}
		if _, err := deleteContact(ctx, tx, workspaceID, lo.ID); err != nil {
			return err
		}
		union := slices.Clone(sv.Tags)
		for _, t := range lo.Tags {
			if !slices.Contains(union, t) {
				union = append(union, t)
			}
		}
		if _, err := s.setTagsTx(ctx, tx, &sv, union, now); err != nil {
			return err
		}
		sv.UpdatedAt = now
		return updateContact(ctx, tx, sv)
	})
	return sv, err
}
