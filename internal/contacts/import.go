package contacts

import (
	"context"
	"maps"
	"slices"
	"sort"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// ImportResult counts what an import did (or, dry, would do). Every row
// lands in exactly one of created, updated, unchanged, held_back (written,
// but not as asked), duplicates (an address repeated in the file) and
// skipped (refused, listed in Errors); imported is created+updated+unchanged.
type ImportResult struct {
	Created    int
	Updated    int
	Unchanged  int
	Duplicates int
	TagsAdded  int
	Imported   int
	HeldBack   int
	Skipped    int
	Held       []HeldRow
	Errors     []RowError
}

// HeldRow is a row written with another status than it asked for.
type HeldRow struct {
	Row    int
	Email  string
	Status string // what the membership is now
	Reason string // "suppressed" or "unsubscribed"
}

// RowError is a refused row.
type RowError struct {
	Row    int
	Email  string
	Reason string
}

// checked is a row that passed validation, normalized.
type checked struct {
	ImportRow
	email string
	tags  []string
}

// Import adds rows to an audience in one transaction: contacts are created
// or gain the row's tags, memberships are created or updated (never
// duplicated). A suppressed address becomes cleaned and an unsubscribed
// member stays unsubscribed, both counted in held_back. With audienceID ""
// only contacts are written, counted by contact, and a row that
// unsubscribes takes its contact off every list (the Resend SDKs'
// contacts.imports). With dryRun nothing is written and the result is what
// would have been done.
func (s *Service) Import(ctx context.Context, workspaceID, audienceID string, rows []ImportRow, dryRun bool) (ImportResult, error) {
	res := ImportResult{Held: []HeldRow{}, Errors: []RowError{}}
	var ok []checked
	seen := map[string]bool{}
	for _, r := range rows {
		c, reason := checkRow(r)
		if reason != "" {
			res.Skipped++
			res.Errors = append(res.Errors, RowError{Row: r.Row, Email: r.Email, Reason: reason})
			continue
		}
		if seen[c.email] {
			res.Duplicates++
			continue
		}
		seen[c.email] = true
		ok = append(ok, c)
	}
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var aud Audience
		if audienceID != "" {
			var err error
			if aud, err = audienceByID(ctx, tx, workspaceID, audienceID); err != nil {
				return notFound(err, errAudienceNotFound)
			}
		}
		// An import's events are tens of thousands of rows: only the kinds
		// an automation starts on are queued (an event made before its
		// automation starts nothing anyway).
		queue := func(string) bool { return true }
		if s.listened != nil {
			kinds, err := s.listened(ctx, tx, workspaceID)
			if err != nil {
				return err
			}
			queue = func(kind string) bool { return kinds[kind] }
		}
		doi, _ := aud.DoubleOptIn()
		emails := make([]string, len(ok))
		for i, c := range ok {
			emails[i] = c.email
		}
		existing, err := contactsByEmail(ctx, tx, workspaceID, emails)
		if err != nil {
			return err
		}
		if h := s.hooks.importRead; h != nil {
			h()
		}
		contactIDs := make([]string, 0, len(existing))
		for _, c := range existing {
			contactIDs = append(contactIDs, c.ID)
		}
		members := map[string]Member{}
		if audienceID != "" {
			members, err = membersOf(ctx, tx, audienceID, contactIDs)
		}
		if err != nil {
			return err
		}
		suppressed, err := suppressions.Suppressed(ctx, tx, workspaceID, emails)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		for _, r := range ok {
			// The contact: created, or given the row's new tags.
			c, found := existing[r.email]
			var added []string
			touched := false // names or (contacts alone) attributes changed
			if !found {
				c = Contact{ID: ids.New("ct"), WorkspaceID: workspaceID, Email: r.email, FirstName: r.FirstName, LastName: r.LastName,
					Attributes: map[string]string{}, Tags: slices.Sorted(slices.Values(r.tags)), CreatedAt: now, UpdatedAt: now}
				added = c.Tags
				if audienceID == "" { // contacts alone: the row's attributes are the contact's
					maps.Copy(c.Attributes, r.Attributes)
				}
				if !dryRun {
					deferContact(tx, c)
					if queue(EventContactCreated) {
						deferEvent(tx, workspaceID, EventContactCreated, c.ID, createdData(c), now)
					}
				}
			} else {
				for _, t := range r.tags {
					if !slices.Contains(c.Tags, t) {
						added = append(added, t)
					}
				}
				// Names fill a contact's empty ones; they never overwrite.
				if c.FirstName == "" && r.FirstName != "" {
					c.FirstName, touched = r.FirstName, true
				}
				if c.LastName == "" && r.LastName != "" {
					c.LastName, touched = r.LastName, true
				}
				if audienceID == "" && len(r.Attributes) > 0 {
					attrs := maps.Clone(c.Attributes)
					if attrs == nil {
						attrs = map[string]string{}
					}
					maps.Copy(attrs, r.Attributes)
					if !maps.Equal(attrs, c.Attributes) {
						c.Attributes, touched = attrs, true
					}
				}
				if (len(added) > 0 || touched) && !dryRun {
					c.Tags = append(slices.Clone(c.Tags), added...)
					sort.Strings(c.Tags)
					c.UpdatedAt = now
					if err := updateContact(ctx, tx, c); err != nil {
						return err
					}
				}
			}
			res.TagsAdded += len(added)
			if !dryRun {
				for _, t := range added {
					if queue(EventTagAdded) {
						deferEvent(tx, workspaceID, EventTagAdded, c.ID, map[string]any{"tag": t, "email": c.Email}, now)
					}
				}
			}

			if audienceID == "" { // contacts alone: counted by the contact
				// A row that unsubscribes takes the contact off every list,
				// as PATCH /v1/contacts/{id} {unsubscribed: true} does.
				unsubscribed := 0
				if found && !dryRun && (r.Status == StatusUnsubscribed || (r.Subscribed != nil && !*r.Subscribed)) {
					if unsubscribed, err = unsubscribeAll(ctx, tx, c.ID, now); err != nil {
						return err
					}
				}
				switch {
				case !found:
					res.Created++
				case len(added) > 0 || touched || unsubscribed > 0:
					res.Updated++
				default:
					res.Unchanged++
				}
				continue
			}

			// The membership.
			m, member := members[c.ID]
			want := r.Status
			if r.Subscribed != nil {
				want = StatusUnsubscribed
				if *r.Subscribed {
					want = StatusSubscribed
				}
			}
			if want == "" {
				want = m.Status // an existing member keeps its status
				if !member {
					want = StatusSubscribed
					if doi {
						want = StatusPending
					}
				}
			}
			held := ""
			switch {
			case suppressed[r.email] != "":
				want, held = StatusCleaned, "suppressed"
			case member && m.Status == StatusUnsubscribed && want != StatusUnsubscribed:
				want, held = StatusUnsubscribed, "unsubscribed"
			}
			if held != "" {
				res.HeldBack++
				res.Held = append(res.Held, HeldRow{Row: r.Row, Email: r.email, Status: want, Reason: held})
			}
			if !member {
				m = Member{ID: ids.New("mem"), WorkspaceID: workspaceID, AudienceID: audienceID, ContactID: c.ID,
					Status: want, Attributes: maps.Clone(r.Attributes), CreatedAt: now, UpdatedAt: now}
				if held == "" {
					res.Created++
				}
				if !dryRun {
					deferMember(tx, m)
					if m.Status == StatusSubscribed {
						if queue(EventMemberSubscribed) {
							deferEvent(tx, workspaceID, EventMemberSubscribed, c.ID, subscribedData(m, c.Email), now)
						}
					}
				}
				continue
			}
			attrs := maps.Clone(m.Attributes)
			maps.Copy(attrs, r.Attributes)
			changed := want != m.Status || !maps.Equal(attrs, m.Attributes)
			switch {
			case held != "":
			case changed || len(added) > 0:
				res.Updated++
			default:
				res.Unchanged++
			}
			if changed && !dryRun {
				was := m.Status
				m.Status, m.Attributes, m.UpdatedAt = want, attrs, now
				if err := updateMember(ctx, tx, m); err != nil {
					return err
				}
				if err := queueSubscribed(ctx, tx, was, m, c.Email, now); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if store.IsUniqueViolation(err) {
		// Another import or create added one of these addresses meanwhile;
		// this one rolled back whole and can simply be sent again.
		return ImportResult{}, apierr.Conflict("import_conflict", "Another change added some of these contacts at the same time; nothing was imported.").
			WithNext("Send the same import again.")
	}
	if err != nil {
		return ImportResult{}, err
	}
	res.Imported = res.Created + res.Updated + res.Unchanged
	if !dryRun && res.Created >= analyzeAfter {
		// After the answer: the rows are committed, and the refresh only
		// helps the plans of what comes next (on PostgreSQL it was a
		// quarter of a 10,000-row import's time). One at a time: an import
		// made while one runs is counted by the next.
		if s.stats.TryLock() {
			go func() {
				defer s.stats.Unlock()
				refreshStatistics(context.WithoutCancel(ctx), s.db)
			}()
		}
	}
	return res, nil
}

// analyzeAfter is how many new rows make an import refresh the planner's
// statistics (see refreshStatistics).
const analyzeAfter = 1000

// checkRow validates and normalizes one row; the reason is "" when the row
// is good.
func checkRow(r ImportRow) (checked, string) {
	c := checked{ImportRow: r}
	if r.Err != "" {
		return c, r.Err
	}
	if r.Email == "" {
		return c, "email is missing"
	}
	e, err := NormalizeEmail(r.Email)
	if err != nil {
		return c, "email " + err.Error()
	}
	c.email = e
	for field, v := range map[string]string{"first_name": r.FirstName, "last_name": r.LastName} {
		if err := checkName(field, v); err != nil {
			return c, apiMessage(err)
		}
	}
	if r.Status != "" && !ValidStatus(r.Status) {
		return c, "status " + r.Status + " is not one of subscribed, unsubscribed, pending, cleaned"
	}
	tags, err := NormalizeTags(r.Tags)
	if err != nil {
		return c, apiMessage(err)
	}
	c.tags = tags
	return c, ""
}
