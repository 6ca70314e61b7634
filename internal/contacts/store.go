package contacts

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"mailroom/internal/ids"
	"mailroom/internal/rules"
	"mailroom/internal/store"
)

// This file holds every statement on the contacts, audiences, memberships,
// automation_events and contact_properties tables; the package is their only reader and writer.

type scanner = store.Scanner

func encodeJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func decodeAttrs(s string) map[string]string {
	m := map[string]string{}
	if json.Unmarshal([]byte(s), &m) != nil || m == nil {
		return map[string]string{}
	}
	return m
}

func decodeTags(s string) []string {
	t := []string{}
	if json.Unmarshal([]byte(s), &t) != nil || t == nil {
		return []string{}
	}
	return t
}

// --- contacts

const contactColumns = `id, workspace_id, email, first_name, last_name, attributes, tags, created_at, updated_at`

func scanContact(sc scanner) (Contact, error) {
	var c Contact
	var attrs, tags string
	var created, updated int64
	if err := sc.Scan(&c.ID, &c.WorkspaceID, &c.Email, &c.FirstName, &c.LastName, &attrs, &tags, &created, &updated); err != nil {
		return c, err
	}
	c.Attributes, c.Tags = decodeAttrs(attrs), decodeTags(tags)
	c.CreatedAt, c.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return c, nil
}

// searchText is what ?q= matches: the address and the names, lowercased.
func searchText(c Contact) string {
	return strings.ToLower(c.Email + " " + c.FirstName + " " + c.LastName)
}

func insertContact(ctx context.Context, q store.Querier, c Contact) error {
	sort.Strings(c.Tags)
	_, err := q.Exec(ctx, `INSERT INTO contacts (`+contactColumns+`, search) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.WorkspaceID, c.Email, c.FirstName, c.LastName, encodeJSON(c.Attributes), encodeJSON(c.Tags),
		store.Millis(c.CreatedAt), store.Millis(c.UpdatedAt), searchText(c))
	return err
}

// updateContact writes every mutable field of c.
func updateContact(ctx context.Context, q store.Querier, c Contact) error {
	sort.Strings(c.Tags)
	_, err := q.Exec(ctx, `UPDATE contacts SET email = ?, first_name = ?, last_name = ?, attributes = ?, tags = ?, updated_at = ?, search = ?
		WHERE id = ? AND workspace_id = ?`,
		c.Email, c.FirstName, c.LastName, encodeJSON(c.Attributes), encodeJSON(c.Tags), store.Millis(c.UpdatedAt), searchText(c), c.ID, c.WorkspaceID)
	return err
}

// lockContact takes the row's write lock in the caller's transaction (a
// no-op update, which both dialects lock the same way) and reads it, so a
// read-modify-write of tags or attributes cannot lose a concurrent change.
func lockContact(ctx context.Context, tx *store.Tx, workspaceID, id string) (Contact, error) {
	res, err := tx.Exec(ctx, `UPDATE contacts SET updated_at = updated_at WHERE id = ? AND workspace_id = ?`, id, workspaceID)
	if err != nil {
		return Contact{}, fmt.Errorf("locking contact: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Contact{}, store.ErrNotFound
	}
	return contactByID(ctx, tx, workspaceID, id)
}

func contactByID(ctx context.Context, q store.Querier, workspaceID, id string) (Contact, error) {
	return scanContact(q.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

func contactByEmail(ctx context.Context, q store.Querier, workspaceID, email string) (Contact, error) {
	return scanContact(q.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts WHERE workspace_id = ? AND email = ?`, workspaceID, email))
}

// contactsByEmail reads the workspace's contacts for the given addresses.
func contactsByEmail(ctx context.Context, q store.Querier, workspaceID string, emails []string) (map[string]Contact, error) {
	out := make(map[string]Contact, len(emails))
	for start := 0; start < len(emails); start += 500 {
		chunk := emails[start:min(start+500, len(emails))]
		args, in := store.PaddedIn([]any{workspaceID}, chunk)
		cs, err := store.QueryAll(ctx, q, scanContact, `SELECT `+contactColumns+` FROM contacts WHERE workspace_id = ? AND email IN (`+in+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("reading contacts: %w", err)
		}
		for _, c := range cs {
			out[c.Email] = c
		}
	}
	return out, nil
}

// deleteContact removes a contact and its memberships.
func deleteContact(ctx context.Context, tx *store.Tx, workspaceID, id string) (bool, error) {
	res, err := tx.Exec(ctx, `DELETE FROM contacts WHERE id = ? AND workspace_id = ?`, id, workspaceID)
	if err != nil {
		return false, fmt.Errorf("deleting contact: %w", err)
	}
	n, _ := res.RowsAffected()
	if n == 0 {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM memberships WHERE contact_id = ? AND workspace_id = ?`, id, workspaceID); err != nil {
		return false, fmt.Errorf("deleting memberships: %w", err)
	}
	return true, nil
}

// scanFirst is how many of a workspace's newest contacts (after the
// cursor) a ?q= listing of limit rows tests one by one before it turns to
// the trigram index: a term that fills the page among them (one contact
// in 20 or more matches) is common enough that scanning on is the
// cheapest way, and one that does not is rare enough that reading every
// match through the index and sorting them is (docs/decisions.md,
// "Contacts search").
func scanFirst(limit int) int { return max(1000, 20*limit) }

// listContacts reads a page of a workspace's contacts, newest first. ?q=
// is a substring of search (the address and the names, lowercased). The
// listing first tests the scanFirst(limit) newest contacts; when they neither
// fill the page nor are all the workspace holds, it reads the term's
// matches through the trigram index and sorts them. A term shorter than
// three characters, which no trigram serves, scans on instead.
func listContacts(ctx context.Context, db *store.DB, workspaceID string, f ListFilter, limit int, pos *Position) ([]Contact, error) {
	where := `workspace_id = ?`
	args := []any{workspaceID}
	if f.Lookup != "" {
		where += ` AND email = ?`
		args = append(args, f.Lookup)
	}
	if pos != nil {
		where += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, pos.At, pos.At, pos.ID)
	}
	const order = ` ORDER BY created_at DESC, id DESC LIMIT ?`
	read := func(q string, args ...any) ([]Contact, error) {
		out, err := store.QueryAll(ctx, db, scanContact, `SELECT `+contactColumns+` FROM `+q, args...)
		if err != nil {
			return nil, fmt.Errorf("listing contacts: %w", err)
		}
		return out, nil
	}
	term := strings.ToLower(f.Q)
	if term == "" {
		return read(`contacts WHERE `+where+order, append(args, limit)...)
	}
	budget := scanFirst(limit)
	has := db.HasSubstring(store.Cat("c.search"), term)
	contains, cargs := has.SQL, has.Args
	scanned := func(n int) []any { return append(append(append([]any{}, args...), n), append(cargs, limit)...) }
	first, err := read(`(SELECT * FROM contacts WHERE `+where+order+`) c WHERE `+contains+order, scanned(budget)...)
	if err != nil || len(first) == limit {
		return first, err
	}
	var seen int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM contacts WHERE `+where+` LIMIT ?) c`,
		append(append([]any{}, args...), budget+1)...).Scan(&seen); err != nil {
		return nil, fmt.Errorf("listing contacts: %w", err)
	}
	if seen <= budget {
		return first, nil // the scan saw every contact
	}
	if utf8.RuneCountInString(term) < store.MinIndexedTerm {
		return read(`contacts c WHERE `+where+` AND `+contains+order, append(append(args, cargs...), limit)...)
	}
	matches, margs := db.ContainsIndexed("contacts", "search", term)
	return read(matches+` c WHERE `+where+order, append(append(margs, args...), limit)...)
}

// --- automation events

func insertEvent(ctx context.Context, tx *store.Tx, workspaceID, kind, contactID string, data map[string]any, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO automation_events (id, workspace_id, kind, contact_id, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		ids.New("aev"), workspaceID, kind, contactID, encodeJSON(data), store.Millis(now))
	if err != nil {
		return fmt.Errorf("queueing automation event: %w", err)
	}
	signalEvents(tx)
	return nil
}

// pendingEvents reads unconsumed events oldest first, locked for the
// transaction (SKIP LOCKED: two nodes' consumers take different events).
func pendingEvents(ctx context.Context, tx *store.Tx, limit int) ([]AutomationEvent, error) {
	rows, err := tx.Query(ctx, `SELECT id, workspace_id, kind, contact_id, data, created_at FROM automation_events
		WHERE consumed_at IS NULL ORDER BY seq LIMIT ?`+tx.SkipLocked(), limit)
	if err != nil {
		return nil, fmt.Errorf("reading pending automation events: %w", err)
	}
	defer rows.Close()
	out := []AutomationEvent{}
	for rows.Next() {
		var e AutomationEvent
		var data string
		var at int64
		if err := rows.Scan(&e.ID, &e.WorkspaceID, &e.Kind, &e.ContactID, &data, &at); err != nil {
			return nil, err
		}
		e.Data = map[string]any{}
		_ = json.Unmarshal([]byte(data), &e.Data)
		e.CreatedAt = store.FromMillis(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

func markConsumed(ctx context.Context, tx *store.Tx, ids []string, now time.Time) error {
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := []any{store.Millis(now)}
		for _, id := range ids[:n] {
			args = append(args, id)
		}
		if _, err := tx.Exec(ctx, `UPDATE automation_events SET consumed_at = ? WHERE id IN (`+store.Placeholders(n)+`)`, args...); err != nil {
			return fmt.Errorf("marking automation events consumed: %w", err)
		}
		ids = ids[n:]
	}
	return nil
}

func listEvents(ctx context.Context, q store.Querier, workspaceID, contactID string) ([]AutomationEvent, error) {
	rows, err := q.Query(ctx, `SELECT id, kind, contact_id, data, created_at FROM automation_events
		WHERE workspace_id = ? AND contact_id = ? ORDER BY seq`, workspaceID, contactID)
	if err != nil {
		return nil, fmt.Errorf("reading automation events: %w", err)
	}
	defer rows.Close()
	out := []AutomationEvent{}
	for rows.Next() {
		var e AutomationEvent
		var data string
		var at int64
		if err := rows.Scan(&e.ID, &e.Kind, &e.ContactID, &data, &at); err != nil {
			return nil, err
		}
		e.Data = map[string]any{}
		_ = json.Unmarshal([]byte(data), &e.Data)
		e.CreatedAt = store.FromMillis(at)
		e.WorkspaceID = workspaceID
		out = append(out, e)
	}
	return out, rows.Err()
}

// --- audiences

const audienceColumns = `id, workspace_id, name, description, require_double_opt_in, confirmation_subject, confirmation_body, created_at, updated_at`

func scanAudience(sc scanner) (Audience, error) {
	var a Audience
	var doi sql.NullInt64
	var subj, body sql.NullString
	var created, updated int64
	if err := sc.Scan(&a.ID, &a.WorkspaceID, &a.Name, &a.Description, &doi, &subj, &body, &created, &updated); err != nil {
		return a, err
	}
	if doi.Valid {
		v := doi.Int64 != 0
		a.RequireDoubleOptIn = &v
	}
	if subj.Valid {
		a.ConfirmationSubject = &subj.String
	}
	if body.Valid {
		a.ConfirmationBody = &body.String
	}
	a.CreatedAt, a.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return a, nil
}

func audienceArgs(a Audience) (doi, subj, body any) {
	if a.RequireDoubleOptIn != nil {
		doi = 0
		if *a.RequireDoubleOptIn {
			doi = 1
		}
	}
	if a.ConfirmationSubject != nil {
		subj = *a.ConfirmationSubject
	}
	if a.ConfirmationBody != nil {
		body = *a.ConfirmationBody
	}
	return doi, subj, body
}

func insertAudience(ctx context.Context, q store.Querier, a Audience) error {
	doi, subj, body := audienceArgs(a)
	_, err := q.Exec(ctx, `INSERT INTO audiences (`+audienceColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.WorkspaceID, a.Name, a.Description, doi, subj, body, store.Millis(a.CreatedAt), store.Millis(a.UpdatedAt))
	return err
}

func updateAudience(ctx context.Context, q store.Querier, a Audience) error {
	doi, subj, body := audienceArgs(a)
	_, err := q.Exec(ctx, `UPDATE audiences SET name = ?, description = ?, require_double_opt_in = ?, confirmation_subject = ?,
		confirmation_body = ?, updated_at = ? WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL`,
		a.Name, a.Description, doi, subj, body, store.Millis(a.UpdatedAt), a.ID, a.WorkspaceID)
	return err
}

func audienceNameTaken(ctx context.Context, q store.Querier, workspaceID, name, except string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM audiences WHERE workspace_id = ? AND name = ? AND id <> ? AND deleted_at IS NULL`,
		workspaceID, name, except).Scan(&n)
	return n > 0, err
}

// audienceByID reads one live (not deleted) audience.
func audienceByID(ctx context.Context, q store.Querier, workspaceID, id string) (Audience, error) {
	return scanAudience(q.QueryRow(ctx, `SELECT `+audienceColumns+` FROM audiences WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL`, id, workspaceID))
}

func listAudiences(ctx context.Context, q store.Querier, workspaceID string) ([]Audience, error) {
	out, err := store.QueryAll(ctx, q, scanAudience, `SELECT `+audienceColumns+` FROM audiences WHERE workspace_id = ? AND deleted_at IS NULL ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("listing audiences: %w", err)
	}
	return out, nil
}

func softDeleteAudience(ctx context.Context, q store.Querier, workspaceID, id string, now time.Time) (bool, error) {
	res, err := q.Exec(ctx, `UPDATE audiences SET deleted_at = ? WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL`,
		store.Millis(now), id, workspaceID)
	if err != nil {
		return false, fmt.Errorf("deleting audience: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// --- memberships

const memberColumns = `m.id, m.workspace_id, m.audience_id, m.contact_id, c.email, m.status, m.attributes, m.confirm_sends, m.created_at, m.updated_at`

// memberFrom joins a membership to its contact (for the address) and to its
// live audience.
const memberFrom = ` FROM memberships m JOIN contacts c ON c.id = m.contact_id JOIN audiences a ON a.id = m.audience_id AND a.deleted_at IS NULL`

func scanMember(sc scanner) (Member, error) {
	var m Member
	var attrs string
	var created, updated int64
	if err := sc.Scan(&m.ID, &m.WorkspaceID, &m.AudienceID, &m.ContactID, &m.Email, &m.Status, &attrs, &m.ConfirmSends, &created, &updated); err != nil {
		return m, err
	}
	m.Attributes = decodeAttrs(attrs)
	m.CreatedAt, m.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return m, nil
}

func memberByID(ctx context.Context, q store.Querier, workspaceID, audienceID, id string) (Member, error) {
	return scanMember(q.QueryRow(ctx, `SELECT `+memberColumns+memberFrom+` WHERE m.id = ? AND m.workspace_id = ? AND m.audience_id = ?`,
		id, workspaceID, audienceID))
}

func memberCounts(ctx context.Context, q store.Querier, audienceID string) (MemberCounts, error) {
	var c MemberCounts
	var sub sql.NullInt64
	err := q.QueryRow(ctx, `SELECT COUNT(*), SUM(CASE WHEN status = 'subscribed' THEN 1 ELSE 0 END) FROM memberships WHERE audience_id = ?`,
		audienceID).Scan(&c.Contacts, &sub)
	c.Subscribed = int(sub.Int64)
	if err != nil {
		return c, fmt.Errorf("counting members: %w", err)
	}
	return c, nil
}

func listMembers(ctx context.Context, q store.Querier, audienceID, status string, match *store.Expr, limit, offset int, pos *Position) ([]Member, error) {
	where := ` WHERE m.audience_id = ?`
	args := []any{audienceID}
	if status != "" {
		where += ` AND m.status = ?`
		args = append(args, status)
	}
	if match != nil {
		where += ` AND ` + match.SQL
		args = append(args, match.Args...)
	}
	if pos != nil {
		where += ` AND (m.created_at < ? OR (m.created_at = ? AND m.id < ?))`
		args = append(args, pos.At, pos.At, pos.ID)
		offset = 0
	}
	args = append(args, limit, offset)
	out, err := store.QueryAll(ctx, q, scanMember, `SELECT `+memberColumns+memberFrom+where+` ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing members: %w", err)
	}
	return out, nil
}

func updateMember(ctx context.Context, q store.Querier, m Member) error {
	_, err := q.Exec(ctx, `UPDATE memberships SET status = ?, attributes = ?, confirm_sends = ?, updated_at = ? WHERE id = ?`,
		m.Status, encodeJSON(m.Attributes), m.ConfirmSends, store.Millis(m.UpdatedAt), m.ID)
	return err
}

func insertMember(ctx context.Context, q store.Querier, m Member) error {
	_, err := q.Exec(ctx, `INSERT INTO memberships (id, workspace_id, audience_id, contact_id, status, attributes, confirm_sends, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.WorkspaceID, m.AudienceID, m.ContactID, m.Status, encodeJSON(m.Attributes), m.ConfirmSends,
		store.Millis(m.CreatedAt), store.Millis(m.UpdatedAt))
	return err
}

func deleteMember(ctx context.Context, q store.Querier, workspaceID, audienceID, id string) (bool, error) {
	ok, err := store.Changed(q.Exec(ctx, `DELETE FROM memberships WHERE id = ? AND workspace_id = ? AND audience_id = ?`, id, workspaceID, audienceID))
	if err != nil {
		return false, fmt.Errorf("deleting member: %w", err)
	}
	return ok, nil
}

// membersOf reads an audience's memberships (deleted audience included) for
// the given contacts, by contact id.
func membersOf(ctx context.Context, q store.Querier, audienceID string, contactIDs []string) (map[string]Member, error) {
	out := make(map[string]Member, len(contactIDs))
	for start := 0; start < len(contactIDs); start += 500 {
		chunk := contactIDs[start:min(start+500, len(contactIDs))]
		args, in := store.PaddedIn([]any{audienceID}, chunk)
		ms, err := store.QueryAll(ctx, q, scanMember, `SELECT `+memberColumns+` FROM memberships m JOIN contacts c ON c.id = m.contact_id
			WHERE m.audience_id = ? AND m.contact_id IN (`+in+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("reading members: %w", err)
		}
		for _, m := range ms {
			out[m.ContactID] = m
		}
	}
	return out, nil
}

// Rows an import writes go in multi-row statements at commit
// (store.Tx.DeferInsert); nothing in the import reads them back.
var (
	contactInsertColumns = []string{"id", "workspace_id", "email", "first_name", "last_name", "attributes", "tags", "created_at", "updated_at", "search"}
	memberInsertColumns  = []string{"id", "workspace_id", "audience_id", "contact_id", "status", "attributes", "confirm_sends", "created_at", "updated_at"}
	eventInsertColumns   = []string{"id", "workspace_id", "kind", "contact_id", "data", "created_at"}
)

func deferContact(tx *store.Tx, c Contact) {
	tx.DeferInsert("contacts", contactInsertColumns, c.ID, c.WorkspaceID, c.Email, c.FirstName, c.LastName,
		encodeJSON(c.Attributes), encodeJSON(c.Tags), store.Millis(c.CreatedAt), store.Millis(c.UpdatedAt), searchText(c))
}

func deferMember(tx *store.Tx, m Member) {
	tx.DeferInsert("memberships", memberInsertColumns, m.ID, m.WorkspaceID, m.AudienceID, m.ContactID, m.Status,
		encodeJSON(m.Attributes), int64(m.ConfirmSends), store.Millis(m.CreatedAt), store.Millis(m.UpdatedAt))
}

func deferEvent(tx *store.Tx, workspaceID, kind, contactID string, data map[string]any, now time.Time) {
	signalEvents(tx)
	tx.DeferInsert("automation_events", eventInsertColumns, ids.New("aev"), workspaceID, kind, contactID, encodeJSON(data), store.Millis(now))
}

// audiencesOf lists a contact's memberships of live audiences.
func audiencesOf(ctx context.Context, q store.Querier, workspaceID, contactID string) ([]AudienceSubscription, error) {
	rows, err := q.Query(ctx, `SELECT a.id, a.name, m.id, m.status FROM memberships m JOIN audiences a ON a.id = m.audience_id AND a.deleted_at IS NULL
		WHERE m.contact_id = ? AND m.workspace_id = ? ORDER BY a.created_at, a.id`, contactID, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("reading memberships: %w", err)
	}
	defer rows.Close()
	out := []AudienceSubscription{}
	for rows.Next() {
		var a AudienceSubscription
		if err := rows.Scan(&a.AudienceID, &a.AudienceName, &a.MembershipID, &a.Status); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// memberAnyWorkspace reads a membership of a live audience by id alone (a
// signed link names it) with its audience's name.
func memberAnyWorkspace(ctx context.Context, q store.Querier, id string) (Member, string, error) {
	var name string
	m, err := scanMemberWith(q.QueryRow(ctx, `SELECT `+memberColumns+`, a.name`+memberFrom+` WHERE m.id = ?`, id), &name)
	return m, name, err
}

func scanMemberWith(sc scanner, extra ...any) (Member, error) {
	var m Member
	var attrs string
	var created, updated int64
	dest := append([]any{&m.ID, &m.WorkspaceID, &m.AudienceID, &m.ContactID, &m.Email, &m.Status, &attrs, &m.ConfirmSends, &created, &updated}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return m, err
	}
	m.Attributes = decodeAttrs(attrs)
	m.CreatedAt, m.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return m, nil
}

// allContacts reads every contact of a workspace, oldest first.
func allContacts(ctx context.Context, q store.Querier, workspaceID string) ([]Contact, error) {
	out, err := store.QueryAll(ctx, q, scanContact, `SELECT `+contactColumns+` FROM contacts WHERE workspace_id = ? ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("reading contacts: %w", err)
	}
	return out, nil
}

// contactMemberships reads every membership of a contact (deleted
// audiences included), by audience id.
func contactMemberships(ctx context.Context, q store.Querier, contactID string) (map[string]Member, error) {
	ms, err := store.QueryAll(ctx, q, scanMember, `SELECT `+memberColumns+` FROM memberships m JOIN contacts c ON c.id = m.contact_id WHERE m.contact_id = ?`, contactID)
	if err != nil {
		return nil, fmt.Errorf("reading memberships: %w", err)
	}
	out := make(map[string]Member, len(ms))
	for _, m := range ms {
		out[m.AudienceID] = m
	}
	return out, nil
}

func moveMembership(ctx context.Context, q store.Querier, memberID, contactID string, now time.Time) error {
	_, err := q.Exec(ctx, `UPDATE memberships SET contact_id = ?, updated_at = ? WHERE id = ?`, contactID, store.Millis(now), memberID)
	return err
}

func moveEvents(ctx context.Context, q store.Querier, from, to string) error {
	_, err := q.Exec(ctx, `UPDATE automation_events SET contact_id = ? WHERE contact_id = ?`, to, from)
	return err
}

// refreshStatistics has PostgreSQL re-read the size of the tables an import
// grew. Without it the planner keeps the estimate of a small table until
// autovacuum comes by, and plans the next import's address lookups as
// sequential scans: measured, the lookups of a 10,000-row import into
// 30,000 fresh members took 5.9 s instead of 0.06 s. A failure only costs
// speed, so it is not reported.
func refreshStatistics(ctx context.Context, db *store.DB) {
	_ = db.RefreshStatistics(ctx, "contacts", "memberships")
}

// --- people: PeopleQuery's one SELECT. It reads two other areas' tables
// and never writes them: suppressions (who may not be mailed) and topics
// with topic_preferences (who switched a topic off). Their owners write
// the rows; who is suppressed or opted out for a selection is said only
// here (docs/architecture.md, "One selection builder").

// suppressedSQL is true when the contact's address is suppressed for its
// workspace: the workspace's own row or a global one (empty workspace_id).
const suppressedSQL = `EXISTS (SELECT 1 FROM suppressions sp WHERE sp.email = c.email AND (sp.workspace_id = c.workspace_id OR sp.workspace_id = ''))`

// subscribedSQL is true when the contact belongs to some live audience as
// subscribed: consent is a membership's, even for a workspace-wide
// selection.
const subscribedSQL = `EXISTS (SELECT 1 FROM memberships mm JOIN audiences a ON a.id = mm.audience_id AND a.deleted_at IS NULL
				WHERE mm.contact_id = c.id AND mm.status = 'subscribed')`

// topicOptedOut is true when the contact is not to get mail of topic t:
// it switched the topic off, or never switched on a topic off by
// default; a required topic cannot be switched off. The (topic_id, email)
// key makes it one index probe per person.
func topicOptedOut(t TopicOptIn, workspaceID string) store.Expr {
	if t.Required {
		return store.Expr{SQL: "(1=0)"}
	}
	want := 0 // a row switching it off
	if !t.DefaultOptIn {
		want = 1 // no row switching it on
	}
	e := store.Cat(`EXISTS (SELECT 1 FROM topic_preferences tp WHERE tp.topic_id = `, store.Val(t.ID),
		` AND tp.workspace_id = `, store.Val(workspaceID), ` AND tp.email = c.email AND tp.subscribed = `, store.Val(want), `)`)
	if !t.DefaultOptIn {
		return store.Cat(`NOT `, e)
	}
	return e
}

// topicRefOptedOut is the segment rule `topic`: as topicOptedOut, for the
// topic of the contact's workspace named ref (key or id), read in the
// same statement. A ref that names no live topic opts nobody out: an
// archived one neither, as topics.OptedOut reads it for an automation.
func topicRefOptedOut(ref string) store.Expr {
	return store.Cat(`EXISTS (SELECT 1 FROM topics t WHERE t.workspace_id = c.workspace_id AND (t.id = `, store.Val(ref),
		` OR t.topic_key = `, store.Val(ref), `) AND t.required = 0 AND t.archived_at IS NULL AND CASE WHEN t.default_opt_in = 1
		THEN EXISTS (SELECT 1 FROM topic_preferences tp WHERE tp.topic_id = t.id AND tp.email = c.email AND tp.subscribed = 0)
		ELSE NOT EXISTS (SELECT 1 FROM topic_preferences tp WHERE tp.topic_id = t.id AND tp.email = c.email AND tp.subscribed = 1) END)`)
}

// peopleCols are the rule columns over the aliases of peopleFrom (c the
// contact, m the membership within an audience).
func peopleCols(inAudience bool) rules.Columns {
	cols := rules.Columns{
		Email: "c.email", FirstName: "c.first_name", LastName: "c.last_name", Attributes: []string{"c.attributes"}, Tags: "c.tags", CreatedAt: "c.created_at",
		Suppressed: store.Expr{SQL: "(" + suppressedSQL + ")"},
		OptedOut:   topicRefOptedOut,
	}
	if inAudience {
		cols.Status, cols.JoinedAt = "m.status", "m.created_at"
		cols.Attributes = []string{"m.attributes", "c.attributes"}
	}
	return cols
}

// peopleFrom is the FROM and WHERE of a query: the audience's memberships
// with their contacts, or every contact of the workspace; then the
// address, the reach (Mailable: subscribed, not suppressed, not opted out
// of the topic) and the rules.
func peopleFrom(q PeopleQuery) store.Expr {
	var e store.Expr
	if q.audienceID != "" {
		e = store.Cat(` FROM memberships m JOIN contacts c ON c.id = m.contact_id WHERE m.workspace_id = `, store.Val(q.workspaceID),
			` AND m.audience_id = `, store.Val(q.audienceID))
		if q.reach == Mailable {
			e = store.Cat(e, ` AND m.status = 'subscribed'`)
		}
	} else {
		e = store.Cat(` FROM contacts c WHERE c.workspace_id = `, store.Val(q.workspaceID))
		if q.reach == Mailable {
			e = store.Cat(e, ` AND `+subscribedSQL)
		}
	}
	if q.email != "" {
		e = store.Cat(e, ` AND c.email = `, store.Val(q.email))
	}
	if q.reach == Mailable {
		e = store.Cat(e, ` AND NOT `+suppressedSQL)
		if q.topic != nil {
			e = store.Cat(e, ` AND NOT `, topicOptedOut(*q.topic, q.workspaceID))
		}
	}
	if q.rules != nil {
		e = store.Cat(e, " AND ", q.rules.SQL(q.db, peopleCols(q.audienceID != ""), q.now))
	}
	return e
}

func countPeople(ctx context.Context, db store.Querier, q PeopleQuery) (int, error) {
	e := store.Cat(`SELECT COUNT(*)`, peopleFrom(q))
	var n int
	if err := db.QueryRow(ctx, e.SQL, e.Args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting people: %w", err)
	}
	return n, nil
}

const personColumns = `c.id, c.email, c.first_name, c.last_name, c.attributes, c.tags, c.created_at`

// listPeople reads a page of a query in contact id order.
func listPeople(ctx context.Context, db store.Querier, q PeopleQuery) ([]Person, error) {
	cols := personColumns
	in := q.audienceID != ""
	if in {
		cols += `, m.id, m.status, m.attributes, m.created_at`
	}
	e := store.Cat(`SELECT `+cols, peopleFrom(q))
	if q.after != "" {
		e = store.Cat(e, ` AND c.id > `, store.Val(q.after))
	}
	e = store.Cat(e, ` ORDER BY c.id`)
	if q.limit > 0 {
		e = store.Cat(e, ` LIMIT `, store.Val(q.limit))
	}
	return store.QueryAll(ctx, db, scanPerson(in), e.SQL, e.Args...)
}

// Snapshot is the query as a SELECT of (contact_id, email, first_name,
// last_name, attributes, member_attributes, reason), for a caller that
// copies it with INSERT ... SELECT in its own statement (broadcast
// recipients). reason is "" for a person mail may go to, else why not,
// the first that holds: suppressed, unsubscribed, topic_opt_out. Paging
// does not apply.
func (q PeopleQuery) Snapshot() store.Expr {
	mattrs, notSubscribed := `'{}'`, `NOT `+subscribedSQL
	if q.audienceID != "" {
		mattrs, notSubscribed = `m.attributes`, `m.status <> 'subscribed'`
	}
	optOut := store.Expr{}
	if q.topic != nil {
		optOut = store.Cat(` WHEN `, topicOptedOut(*q.topic, q.workspaceID), ` THEN '`+ReasonTopicOptOut+`'`)
	}
	return store.Cat(`SELECT c.id AS contact_id, c.email AS email, c.first_name AS first_name, c.last_name AS last_name,
		c.attributes AS attributes, `+mattrs+` AS member_attributes,
		CASE WHEN `+suppressedSQL+` THEN '`+ReasonSuppressed+`'
		     WHEN `+notSubscribed+` THEN '`+ReasonUnsubscribed+`'`, optOut, `
		     ELSE '' END AS reason`, peopleFrom(q))
}

// --- contact_properties

const propertyColumns = `id, workspace_id, prop_key, prop_type, fallback, created_at, updated_at`

func scanProperty(sc scanner) (Property, error) {
	var p Property
	var fb sql.NullString
	var created, updated int64
	if err := sc.Scan(&p.ID, &p.WorkspaceID, &p.Key, &p.Type, &fb, &created, &updated); err != nil {
		return p, err
	}
	if fb.Valid {
		p.Fallback = &fb.String
	}
	p.CreatedAt, p.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return p, nil
}

func insertProperty(ctx context.Context, q store.Querier, p Property) error {
	_, err := q.Exec(ctx, `INSERT INTO contact_properties (`+propertyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.WorkspaceID, p.Key, p.Type, p.Fallback, store.Millis(p.CreatedAt), store.Millis(p.UpdatedAt))
	return err
}

func updateProperty(ctx context.Context, q store.Querier, p Property) error {
	_, err := q.Exec(ctx, `UPDATE contact_properties SET fallback = ?, updated_at = ? WHERE id = ? AND workspace_id = ?`,
		p.Fallback, store.Millis(p.UpdatedAt), p.ID, p.WorkspaceID)
	return err
}

func propertyByID(ctx context.Context, q store.Querier, workspaceID, id string) (Property, error) {
	return scanProperty(q.QueryRow(ctx, `SELECT `+propertyColumns+` FROM contact_properties WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

func listProperties(ctx context.Context, q store.Querier, workspaceID string) ([]Property, error) {
	return store.QueryAll(ctx, q, scanProperty, `SELECT `+propertyColumns+` FROM contact_properties WHERE workspace_id = ? ORDER BY prop_key`, workspaceID)
}

func countProperties(ctx context.Context, q store.Querier, workspaceID string) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM contact_properties WHERE workspace_id = ?`, workspaceID).Scan(&n)
	return n, err
}

func deleteProperty(ctx context.Context, q store.Querier, workspaceID, id string) (bool, error) {
	return store.Changed(q.Exec(ctx, `DELETE FROM contact_properties WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

// --- contact_imports

const importColumns = `id, workspace_id, audience_id, status, total, created, updated, skipped, failed, created_at, completed_at`

func scanImport(sc scanner) (ImportRecord, error) {
	var r ImportRecord
	var created int64
	var completed sql.NullInt64
	if err := sc.Scan(&r.ID, &r.WorkspaceID, &r.AudienceID, &r.Status, &r.Total, &r.Created, &r.Updated, &r.Skipped, &r.Failed, &created, &completed); err != nil {
		return r, err
	}
	r.CreatedAt, r.CompletedAt = store.FromMillis(created), store.NullMillis(completed)
	return r, nil
}

func insertImport(ctx context.Context, q store.Querier, r ImportRecord) error {
	_, err := q.Exec(ctx, `INSERT INTO contact_imports (`+importColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.WorkspaceID, r.AudienceID, r.Status, r.Total, r.Created, r.Updated, r.Skipped, r.Failed, store.Millis(r.CreatedAt), store.MillisOrNull(r.CompletedAt))
	return err
}

func importByID(ctx context.Context, q store.Querier, workspaceID, id string) (ImportRecord, error) {
	return scanImport(q.QueryRow(ctx, `SELECT `+importColumns+` FROM contact_imports WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

func listImports(ctx context.Context, q store.Querier, workspaceID string, limit int) ([]ImportRecord, error) {
	return store.QueryAll(ctx, q, scanImport, `SELECT `+importColumns+` FROM contact_imports WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, workspaceID, limit)
}
