package capture

import (
	"context"
	"encoding/json"
	"time"

	"mailroom/internal/store"
)

// All of the capture area's SQL (table captured_emails).

const columns = `id, workspace_id, email_id, mail_from, rcpt_to, subject, size, created_at`

func insert(ctx context.Context, db *store.DB, m *Message, data []byte) error {
	to, err := json.Marshal(m.To)
	if err != nil {
		return err
	}
	return db.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO captured_emails (`+columns+`, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.ID, m.WorkspaceID, m.EmailID, m.From, string(to), m.Subject, m.Size, store.Millis(m.CreatedAt), data)
		return err
	})
}

type scanner interface{ Scan(...any) error }

func scan(r scanner, extra ...any) (*Message, error) {
	var m Message
	var to string
	var at int64
	if err := r.Scan(append([]any{&m.ID, &m.WorkspaceID, &m.EmailID, &m.From, &to, &m.Subject, &m.Size, &at}, extra...)...); err != nil {
		return nil, err
	}
	m.CreatedAt = store.FromMillis(at)
	_ = json.Unmarshal([]byte(to), &m.To)
	return &m, nil
}

func list(ctx context.Context, db *store.DB, ws string, limit int, after string) ([]Message, error) {
	q, args := `SELECT `+columns+` FROM captured_emails WHERE workspace_id = ?`, []any{ws}
	if after != "" {
		q += ` AND id < ?`
		args = append(args, after)
	}
	rows, err := db.Query(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, rows.Err()
}

func get(ctx context.Context, db *store.DB, ws, id string) (*Message, []byte, error) {
	var raw []byte
	m, err := scan(db.QueryRow(ctx, `SELECT `+columns+`, data FROM captured_emails WHERE workspace_id = ? AND id = ?`, ws, id), &raw)
	return m, raw, err
}

// Purge removes up to limit captured messages older than before (retention
// keeps them as long as email bodies, MAILROOM_RETAIN_BODIES).
func Purge(ctx context.Context, db *store.DB, before time.Time, limit int) (int64, error) {
	res, err := db.Exec(ctx, `DELETE FROM captured_emails WHERE id IN
		(SELECT id FROM captured_emails WHERE created_at < ? ORDER BY created_at LIMIT ?)`, store.Millis(before), limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
