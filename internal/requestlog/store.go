package requestlog

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// This file holds every statement on request_logs: the area is its only
// reader and writer.

var insertColumns = []string{"id", "workspace_id", "api_key_id", "method", "path", "status", "error_code", "user_agent",
	"request_id", "duration_us", "request_bytes", "response_bytes", "content_type", "created_at"}

const columns = `id, workspace_id, api_key_id, method, path, status, error_code, user_agent,
	request_id, duration_us, request_bytes, response_bytes, content_type, created_at`

// insert writes a batch in one transaction (multi-row statements).
func insert(ctx context.Context, db *store.DB, batch []Entry) error {
	return db.InTx(ctx, func(tx *store.Tx) error {
		for _, e := range batch {
			var ua any
			if e.UserAgent != "" {
				ua = clip(e.UserAgent, maxUserAgent)
			}
			tx.DeferInsert("request_logs", insertColumns, e.ID, e.WorkspaceID, e.APIKeyID, e.Method, clip(e.Path, maxPath), e.Status,
				e.ErrorCode, ua, e.RequestID, e.Duration.Microseconds(), e.RequestBytes, e.ResponseBytes,
				clip(e.ContentType, maxType), store.Millis(e.At))
		}
		return nil
	})
}

func scan(r store.Scanner) (Entry, error) {
	var e Entry
	var ua sql.NullString
	var us, at int64
	err := r.Scan(&e.ID, &e.WorkspaceID, &e.APIKeyID, &e.Method, &e.Path, &e.Status, &e.ErrorCode, &ua,
		&e.RequestID, &us, &e.RequestBytes, &e.ResponseBytes, &e.ContentType, &at)
	e.UserAgent, e.Duration, e.At = ua.String, time.Duration(us)*time.Microsecond, store.FromMillis(at)
	return e, err
}

// list reads a page, newest first: ids are time-ordered, so the window
// and the cursor are both bounds on (workspace_id, id).
func list(ctx context.Context, db *store.DB, workspaceID string, f filter) ([]Entry, error) {
	var b strings.Builder
	b.WriteString(`SELECT ` + columns + ` FROM request_logs WHERE workspace_id = ? AND id >= ? AND id < ?`)
	args := []any{workspaceID, f.from, f.to}
	if f.after != "" {
		b.WriteString(` AND id < ?`)
		args = append(args, f.after)
	}
	if f.statusHi > 0 {
		b.WriteString(` AND status >= ? AND status < ?`)
		args = append(args, f.statusLo, f.statusHi)
	}
	if f.method != "" {
		b.WriteString(` AND method = ?`)
		args = append(args, f.method)
	}
	if f.prefix != "" {
		b.WriteString(` AND substr(path, 1, ?) = ?`)
		args = append(args, len(f.prefix), f.prefix)
	}
	b.WriteString(` ORDER BY id DESC LIMIT ?`)
	args = append(args, f.limit)
	rows, err := store.QueryAll(ctx, db, scan, b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("reading the request log: %w", err)
	}
	return rows, nil
}

func get(ctx context.Context, db *store.DB, workspaceID, id string) (Entry, error) {
	return scan(db.QueryRow(ctx, `SELECT `+columns+` FROM request_logs WHERE workspace_id = ? AND id = ?`, workspaceID, id))
}

// Purge removes up to limit rows older than before (retention.Purge, for
// MAILROOM_RETAIN_REQUEST_LOGS), oldest first, by the time in their ids.
func Purge(ctx context.Context, db *store.DB, before time.Time, limit int) (int64, error) {
	res, err := db.Exec(ctx, `DELETE FROM request_logs WHERE id IN
		(SELECT id FROM request_logs WHERE id < ? ORDER BY id LIMIT ?)`, ids.Floor(idPrefix, before), limit)
	if err != nil {
		return 0, fmt.Errorf("purging the request log: %w", err)
	}
	return res.RowsAffected()
}
