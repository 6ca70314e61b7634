package contacts

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// This file holds every statement on the contacts, audiences, memberships
// and automation_events tables; the package is their only reader and writer.

// querier is what both *store.DB and *store.Tx offer.
type querier interface {
	Exec(ctx context.Context, q string, args ...any) (sql.Result, error)
	Query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRow(ctx context.Context, q string, args ...any) *store.Row
}

type scanner interface{ Scan(...any) error }

func encodeJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func decodeAttrs(s string) map[string]string {
	m := map[string]string{}
	_ = json.Unmarshal([]byte(s), &m)
	return m
}

func decodeTags(s string) []string {
	t := []string{}
	_ = json.Unmarshal([]byte(s), &t)
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

func insertContact(ctx context.Context, q querier, c Contact) error {
	sort.Strings(c.Tags)
	_, err := q.Exec(ctx, `INSERT INTO contacts (`+contactColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.WorkspaceID, c.Email, c.FirstName, c.LastName, encodeJSON(c.Attributes), encodeJSON(c.Tags),
		store.Millis(c.CreatedAt), store.Millis(c.UpdatedAt))
	return err
}

// updateContact writes every mutable field of c.
func updateContact(ctx context.Context, q querier, c Contact) error {
	sort.Strings(c.Tags)
	_, err := q.Exec(ctx, `UPDATE contacts SET email = ?, first_name = ?, last_name = ?, attributes = ?, tags = ?, updated_at = ?
		WHERE id = ? AND workspace_id = ?`,
		c.Email, c.FirstName, c.LastName, encodeJSON(c.Attributes), encodeJSON(c.Tags), store.Millis(c.UpdatedAt), c.ID, c.WorkspaceID)
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
		return Contact{}, sql.ErrNoRows
	}
	return contactByID(ctx, tx, workspaceID, id)
}

func contactByID(ctx context.Context, q querier, workspaceID, id string) (Contact, error) {
	return scanContact(q.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

func contactByEmail(ctx context.Context, q querier, workspaceID, email string) (Contact, error) {
	return scanContact(q.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts WHERE workspace_id = ? AND email = ?`, workspaceID, email))
}

// contactsByEmail reads the workspace's contacts for the given addresses.
func contactsByEmail(ctx context.Context, q querier, workspaceID string, emails []string) (map[string]Contact, error) {
	out := make(map[string]Contact, len(emails))
	for start := 0; start < len(emails); start += 500 {
		chunk := emails[start:min(start+500, len(emails))]
		args, in := store.PaddedIn([]any{workspaceID}, chunk)
		rows, err := q.Query(ctx, `SELECT `+contactColumns+` FROM contacts WHERE workspace_id = ? AND email IN (`+in+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("reading contacts: %w", err)
		}
		for rows.Next() {
			c, err := scanContact(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out[c.Email] = c
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
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

// likeEscape escapes LIKE's wildcards; statements say ESCAPE '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func listContacts(ctx context.Context, q querier, workspaceID string, f ListFilter, limit int, pos *Position) ([]Contact, error) {
	where := `workspace_id = ?`
	args := []any{workspaceID}
	if f.Lookup != "" {
		where += ` AND email = ?`
		args = append(args, f.Lookup)
	}
	if f.Q != "" {
		p := "%" + likeEscape(strings.ToLower(f.Q)) + "%"
		where += ` AND (email LIKE ? ESCAPE '\' OR LOWER(first_name) LIKE ? ESCAPE '\' OR LOWER(last_name) LIKE ? ESCAPE '\'
			OR LOWER(first_name || ' ' || last_name) LIKE ? ESCAPE '\')`
		args = append(args, p, p, p, p)
	}
	if pos != nil {
		where += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, pos.At, pos.At, pos.ID)
	}
	args = append(args, limit)
	rows, err := q.Query(ctx, `SELECT `+contactColumns+` FROM contacts WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing contacts: %w", err)
	}
	defer rows.Close()
	out := []Contact{}
	for rows.Next() {
		c, err := scanContact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// --- automation events

func insertEvent(ctx context.Context, tx *store.Tx, workspaceID, kind, contactID string, data map[string]any, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO automation_events (id, workspace_id, kind, contact_id, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		ids.New("aev"), workspaceID, kind, contactID, encodeJSON(data), store.Millis(now))
	if err != nil {
		return fmt.Errorf("queueing automation event: %w", err)
	}
	return nil
}

func listEvents(ctx context.Context, q querier, workspaceID, contactID string) ([]AutomationEvent, error) {
	rows, err := q.Query(ctx, `SELECT id, kind, contact_id, data, created_at FROM automation_events
		WHERE workspace_id = ? AND contact_id = ? ORDER BY created_at, id`, workspaceID, contactID)
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
