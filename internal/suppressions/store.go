package suppressions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// This file holds every statement on the suppressions table: the area is its
// only reader and writer, and other areas ask through the functions here
// (Suppressed, AddTx, ListedQuery with Applies).

// Applies is the suppression rule: a row stops mail sent by workspace ws
// when it is the workspace's own or a global one.
func Applies(rowWorkspace, ws string) bool {
	return rowWorkspace == globalWorkspace || rowWorkspace == ws
}

// appliesSQL is Applies in SQL, for a statement whose first argument is ws.
const appliesSQL = `(workspace_id = ? OR workspace_id = '')`

// ListedQuery is the read the send path folds into its one batch query
// (a round trip per question cost a fifth of a batch on PostgreSQL): rows
// (tag, workspace_id, email, reason) of every row, of any workspace or
// global, for the given normalized addresses, with tag a constant first
// column that tells these rows from the other reads of a UNION ALL. The
// caller keeps the rows Applies says stop its sends. args gains the
// addresses.
func ListedQuery(tag int, args []any, emails []string) (string, []any) {
	args, in := store.PaddedIn(args, emails)
	return `SELECT ` + strconv.Itoa(tag) + `, workspace_id, email, reason FROM suppressions WHERE email IN (` + in + `)`, args
}

// Suppressed returns, of the given addresses, those suppressed for the
// workspace or globally (normalized form) with their reason; q is the
// database or the caller's transaction.
func Suppressed(ctx context.Context, q store.Querier, workspaceID string, emails []string) (map[string]string, error) {
	out := map[string]string{}
	if len(emails) == 0 {
		return out, nil
	}
	args := []any{workspaceID}
	ph := make([]string, 0, len(emails))
	for _, e := range emails {
		args = append(args, Normalize(e))
		ph = append(ph, "?")
	}
	rows, err := q.Query(ctx, `SELECT email, reason FROM suppressions WHERE `+appliesSQL+` AND email IN (`+strings.Join(ph, ",")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading suppressions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e, r string
		if err := rows.Scan(&e, &r); err != nil {
			return nil, err
		}
		out[e] = r
	}
	return out, rows.Err()
}

// addTx is AddTx that also reports whether this call inserted the row.
func addTx(ctx context.Context, tx *store.Tx, workspaceID, email, reason, sourceEmailID string, now time.Time) (string, bool, error) {
	email = Normalize(email)
	id, err := ownID(ctx, tx, workspaceID, email)
	if err == nil {
		return id, false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", false, fmt.Errorf("reading suppression: %w", err)
	}
	id = ids.New("sup")
	var src any
	if sourceEmailID != "" {
		src = sourceEmailID
	}
	global := 0
	if workspaceID == globalWorkspace {
		global = 1
	}
	res, err := tx.Exec(ctx, `INSERT INTO suppressions (id, workspace_id, email, reason, is_global, source_email_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, email) DO NOTHING`,
		id, workspaceID, email, reason, global, src, store.Millis(now))
	if err != nil {
		return "", false, fmt.Errorf("adding suppression: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		// A concurrent transaction inserted the address first; its row wins.
		if id, err = ownID(ctx, tx, workspaceID, email); err != nil {
			return "", false, fmt.Errorf("reading suppression: %w", err)
		}
		return id, false, nil
	}
	return id, true, nil
}

// ownID is the id of the workspace's own row for a normalized address
// (workspaceID "" for the global row); store.ErrNotFound when there is none.
func ownID(ctx context.Context, q store.Querier, workspaceID, email string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT id FROM suppressions WHERE workspace_id = ? AND email = ?`, workspaceID, email).Scan(&id)
	return id, err
}

// globalRows counts the global rows for a normalized address.
func globalRows(ctx context.Context, q store.Querier, email string) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM suppressions WHERE workspace_id = '' AND email = ?`, email).Scan(&n)
	return n, err
}

const columns = `id, workspace_id, email, reason, is_global, source_email_id, created_at`

func scan(sc interface{ Scan(...any) error }) (Suppression, error) {
	var s Suppression
	var global int
	var src sql.NullString
	var created int64
	if err := sc.Scan(&s.ID, &s.WorkspaceID, &s.Email, &s.Reason, &global, &src, &created); err != nil {
		return s, err
	}
	s.IsGlobal = global != 0 || s.WorkspaceID == globalWorkspace
	s.SourceEmailID = src.String
	s.CreatedAt = store.FromMillis(created)
	return s, nil
}

// byID reads one row by id, whoever owns it.
func byID(ctx context.Context, q store.Querier, id string) (Suppression, error) {
	return scan(q.QueryRow(ctx, `SELECT `+columns+` FROM suppressions WHERE id = ?`, id))
}

// ownByID reads one of the workspace's own rows by id.
func ownByID(ctx context.Context, q store.Querier, workspaceID, id string) (Suppression, error) {
	return scan(q.QueryRow(ctx, `SELECT `+columns+` FROM suppressions WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

// deleteOwn removes one of the workspace's own rows by id and reports
// whether there was one.
func deleteOwn(ctx context.Context, q store.Querier, workspaceID, id string) (bool, error) {
	res, err := q.Exec(ctx, `DELETE FROM suppressions WHERE id = ? AND workspace_id = ?`, id, workspaceID)
	if err != nil {
		return false, fmt.Errorf("deleting suppression: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// list is the listing of Service.List: up to limit rows visible to the
// workspace matching f, newest first after pos, and the count of all
// matching rows.
func list(ctx context.Context, q store.Querier, workspaceID string, f Filter, limit int, pos *Position) ([]Suppression, int, error) {
	where := `workspace_id IN (?, '')`
	args := []any{workspaceID}
	if f.Reason != "" {
		where += ` AND reason = ?`
		args = append(args, f.Reason)
	}
	if f.Email != "" {
		where += ` AND email = ?`
		args = append(args, Normalize(f.Email))
	}
	var total int
	if err := q.QueryRow(ctx, `SELECT COUNT(*) FROM suppressions WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("counting suppressions: %w", err)
	}
	if pos != nil {
		where += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, pos.At, pos.At, pos.ID)
	}
	args = append(args, limit)
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM suppressions WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("listing suppressions: %w", err)
	}
	defer rows.Close()
	out := make([]Suppression, 0, limit)
	for rows.Next() {
		sp, err := scan(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, sp)
	}
	return out, total, rows.Err()
}
