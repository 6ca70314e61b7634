package contacts

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

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
	ok := checkRows(rows, &res)
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		im, err := s.readForImport(ctx, tx, workspaceID, audienceID, ok)
		if err != nil {
			return err
		}
		im.dryRun, im.res = dryRun, &res
		for _, r := range ok {
			if err := im.row(ctx, r); err != nil {
				return err
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
		s.refreshStatisticsLater(ctx)
	}
	return res, nil
}

// checkRows keeps the rows worth writing: a refused row is counted and
// listed in res.Errors, a repeated address counted as a duplicate.
func checkRows(rows []ImportRow, res *ImportResult) []checked {
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
	return ok
}

// importTx is one import inside its transaction: what was read up front,
// so that each row is decided without another query, and the counts.
type importTx struct {
	tx          *store.Tx
	workspaceID string
	audienceID  string // "" when the import writes contacts alone
	dryRun      bool
	now         time.Time
	doi         bool                   // the audience asks new members to confirm
	queue       func(kind string) bool // whether an event of kind is worth queueing
	existing    map[string]Contact     // by email
	members     map[string]Member      // by contact id
	suppressed  map[string]string      // by email
	res         *ImportResult
}

// readForImport reads, in a few queries for the whole file, the audience,
// the contacts and memberships the rows already have and which addresses
// are suppressed.
func (s *Service) readForImport(ctx context.Context, tx *store.Tx, workspaceID, audienceID string, rows []checked) (*importTx, error) {
	var aud Audience
	if audienceID != "" {
		var err error
		if aud, err = audienceByID(ctx, tx, workspaceID, audienceID); err != nil {
			return nil, notFound(err, errAudienceNotFound)
		}
	}
	// An import's events are tens of thousands of rows: only the kinds
	// an automation starts on are queued (an event made before its
	// automation starts nothing anyway).
	queue := func(string) bool { return true }
	if s.listened != nil {
		kinds, err := s.listened(ctx, tx, workspaceID)
		if err != nil {
			return nil, err
		}
		queue = func(kind string) bool { return kinds[kind] }
	}
	doi, _ := aud.DoubleOptIn()
	emails := make([]string, len(rows))
	for i, c := range rows {
		emails[i] = c.email
	}
	existing, err := contactsByEmail(ctx, tx, workspaceID, emails)
	if err != nil {
		return nil, err
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
		if members, err = membersOf(ctx, tx, audienceID, contactIDs); err != nil {
			return nil, err
		}
	}
	suppressed, err := suppressions.Suppressed(ctx, tx, workspaceID, emails)
	if err != nil {
		return nil, err
	}
	return &importTx{tx: tx, workspaceID: workspaceID, audienceID: audienceID, now: s.clock.Now(), doi: doi, queue: queue,
		existing: existing, members: members, suppressed: suppressed}, nil
}

// row writes one row: its contact, then its membership (or, without an
// audience, counts it by the contact).
func (im *importTx) row(ctx context.Context, r checked) error {
	c, found := im.existing[r.email]
	var added []string
	touched := false // names or (contacts alone) attributes changed
	if !found {
		c = im.newContact(r)
		added = c.Tags
	} else {
		var err error
		if c, added, touched, err = im.mergeContact(ctx, c, r); err != nil {
			return err
		}
	}
	im.res.TagsAdded += len(added)
	if !im.dryRun {
		for _, t := range added {
			if im.queue(EventTagAdded) {
				deferEvent(im.tx, im.workspaceID, EventTagAdded, c.ID, map[string]any{"tag": t, "email": c.Email}, im.now)
			}
		}
	}
	if im.audienceID == "" {
		return im.countContact(ctx, r, c, found, len(added) > 0 || touched)
	}
	return im.membership(ctx, r, c, len(added) > 0)
}

// newContact creates the row's contact (written at commit).
func (im *importTx) newContact(r checked) Contact {
	c := Contact{ID: ids.New("ct"), WorkspaceID: im.workspaceID, Email: r.email, FirstName: r.FirstName, LastName: r.LastName,
		Attributes: map[string]string{}, Tags: slices.Sorted(slices.Values(r.tags)), CreatedAt: im.now, UpdatedAt: im.now}
	if im.audienceID == "" { // contacts alone: the row's attributes are the contact's
		maps.Copy(c.Attributes, r.Attributes)
	}
	if !im.dryRun {
		deferContact(im.tx, c)
		if im.queue(EventContactCreated) {
			deferEvent(im.tx, im.workspaceID, EventContactCreated, c.ID, createdData(c), im.now)
		}
	}
	return c
}

// mergeContact gives an existing contact the row's new tags, the names it
// lacks and (contacts alone) its attributes; it answers the tags added and
// whether anything else changed.
func (im *importTx) mergeContact(ctx context.Context, c Contact, r checked) (Contact, []string, bool, error) {
	var added []string
	touched := false
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
	if im.audienceID == "" && len(r.Attributes) > 0 {
		attrs := maps.Clone(c.Attributes)
		if attrs == nil {
			attrs = map[string]string{}
		}
		maps.Copy(attrs, r.Attributes)
		if !maps.Equal(attrs, c.Attributes) {
			c.Attributes, touched = attrs, true
		}
	}
	if (len(added) > 0 || touched) && !im.dryRun {
		c.Tags = append(slices.Clone(c.Tags), added...)
		sort.Strings(c.Tags)
		c.UpdatedAt = im.now
		if err := updateContact(ctx, im.tx, c); err != nil {
			return c, nil, false, err
		}
	}
	return c, added, touched, nil
}

// countContact counts a row of an import without an audience by its
// contact. A row that unsubscribes takes the contact off every list, as
// PATCH /v1/contacts/{id} {unsubscribed: true} does.
func (im *importTx) countContact(ctx context.Context, r checked, c Contact, found, changed bool) error {
	unsubscribed := 0
	if found && !im.dryRun && (r.Status == StatusUnsubscribed || (r.Subscribed != nil && !*r.Subscribed)) {
		var err error
		if unsubscribed, err = unsubscribeAll(ctx, im.tx, c.ID, im.now); err != nil {
			return err
		}
	}
	switch {
	case !found:
		im.res.Created++
	case changed || unsubscribed > 0:
		im.res.Updated++
	default:
		im.res.Unchanged++
	}
	return nil
}

// membership creates or updates the contact's membership of the audience
// and counts the row by it; tagged says the contact gained tags.
func (im *importTx) membership(ctx context.Context, r checked, c Contact, tagged bool) error {
	m, member := im.members[c.ID]
	want, held := im.status(r, m, member)
	if held != "" {
		im.res.HeldBack++
		im.res.Held = append(im.res.Held, HeldRow{Row: r.Row, Email: r.email, Status: want, Reason: held})
	}
	if !member {
		m = Member{ID: ids.New("mem"), WorkspaceID: im.workspaceID, AudienceID: im.audienceID, ContactID: c.ID,
			Status: want, Attributes: maps.Clone(r.Attributes), CreatedAt: im.now, UpdatedAt: im.now}
		if held == "" {
			im.res.Created++
		}
		if !im.dryRun {
			deferMember(im.tx, m)
			if m.Status == StatusSubscribed && im.queue(EventMemberSubscribed) {
				deferEvent(im.tx, im.workspaceID, EventMemberSubscribed, c.ID, subscribedData(m, c.Email), im.now)
			}
		}
		return nil
	}
	attrs := maps.Clone(m.Attributes)
	maps.Copy(attrs, r.Attributes)
	changed := want != m.Status || !maps.Equal(attrs, m.Attributes)
	switch {
	case held != "":
	case changed || tagged:
		im.res.Updated++
	default:
		im.res.Unchanged++
	}
	if !changed || im.dryRun {
		return nil
	}
	was := m.Status
	m.Status, m.Attributes, m.UpdatedAt = want, attrs, im.now
	if err := updateMember(ctx, im.tx, m); err != nil {
		return err
	}
	return queueSubscribed(ctx, im.tx, was, m, c.Email, im.now)
}

// status is the membership status a row ends with, and why it is not the
// one asked for ("" when it is): a suppressed address is cleaned and an
// unsubscribed member stays unsubscribed. A row that asks for none keeps
// a member's status and makes a new member subscribed (pending when the
// audience asks to confirm).
func (im *importTx) status(r checked, m Member, member bool) (want, held string) {
	want = r.Status
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
			if im.doi {
				want = StatusPending
			}
		}
	}
	switch {
	case im.suppressed[r.email] != "":
		return StatusCleaned, "suppressed"
	case member && m.Status == StatusUnsubscribed && want != StatusUnsubscribed:
		return StatusUnsubscribed, "unsubscribed"
	}
	return want, ""
}

// refreshStatisticsLater refreshes the planner's statistics after the
// answer: the rows are committed, and the refresh only helps the plans of
// what comes next (on PostgreSQL it was a quarter of a 10,000-row import's
// time). One at a time: an import made while one runs is counted by the
// next.
func (s *Service) refreshStatisticsLater(ctx context.Context) {
	if s.stats.TryLock() {
		go func() {
			defer s.stats.Unlock()
			refreshStatistics(context.WithoutCancel(ctx), s.db)
		}()
	}
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
