// Package suppressions is the list of addresses mail must not go to: rows
// per workspace (from a bounce, a complaint, an unsubscribe or by hand) and
// global rows that the operator adds for the whole service.
package suppressions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// Reasons the spec defines.
const (
	ReasonBounce    = "bounce"
	ReasonComplaint = "complaint"
	ReasonUnsub     = "unsub"
	ReasonManual    = "manual"
)

// ValidReason reports whether r is one of the spec's reasons.
func ValidReason(r string) bool {
	switch r {
	case ReasonBounce, ReasonComplaint, ReasonUnsub, ReasonManual:
		return true
	}
	return false
}

// globalWorkspace is the workspace_id of service-wide rows.
const globalWorkspace = ""

// Normalize is the stored form of an address: trimmed and lowercased, so a
// suppression matches however the caller spells the address.
func Normalize(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// AddTx records a suppression inside tx; an existing row for the address is
// kept as it is (the first reason wins). It returns the row id.
func AddTx(ctx context.Context, tx *store.Tx, workspaceID, email, reason, sourceEmailID string, now time.Time) (string, error) {
	id, _, err := addTx(ctx, tx, workspaceID, email, reason, sourceEmailID, now)
	return id, err
}

// addTx is AddTx that also reports whether this call inserted the row.
func addTx(ctx context.Context, tx *store.Tx, workspaceID, email, reason, sourceEmailID string, now time.Time) (string, bool, error) {
	email = Normalize(email)
	var id string
	err := tx.QueryRow(ctx, `SELECT id FROM suppressions WHERE workspace_id = ? AND email = ?`, workspaceID, email).Scan(&id)
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
		if err := tx.QueryRow(ctx, `SELECT id FROM suppressions WHERE workspace_id = ? AND email = ?`, workspaceID, email).Scan(&id); err != nil {
			return "", false, fmt.Errorf("reading suppression: %w", err)
		}
		return id, false, nil
	}
	return id, true, nil
}

// AddGlobal records a service-wide suppression (operator command).
func AddGlobal(ctx context.Context, db *store.DB, email, reason string, now time.Time) (id, stored string, err error) {
	err = db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if id, err = AddTx(ctx, tx, globalWorkspace, email, reason, "", now); err != nil {
			return err
		}
		// An address already suppressed keeps its first reason; report
		// the row as it is.
		return tx.QueryRow(ctx, `SELECT reason FROM suppressions WHERE id = ?`, id).Scan(&stored)
	})
	return id, stored, err
}

// Suppressed returns, of the given addresses, those suppressed for the
// workspace or globally (normalized form).
func Suppressed(ctx context.Context, db *store.DB, workspaceID string, emails []string) (map[string]string, error) {
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
	rows, err := db.Query(ctx, `SELECT email, reason FROM suppressions WHERE (workspace_id = ? OR workspace_id = '') AND email IN (`+strings.Join(ph, ",")+`)`, args...)
	if err != nil {
		return nil, err
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
