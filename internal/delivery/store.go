package delivery

import (
	"context"
	"time"

	"mailroom/internal/store"
)

// The delivery engine's one table is outbound_messages: the signed bytes of
// an email still owed a retry, so a retry sends what the first attempt
// signed. The emails row belongs to the sending area (sending.LoadOutgoing,
// sending.LockOutcome, sending.WriteOutcome).

// keepSigned stores an email's signed message for its retries.
func keepSigned(ctx context.Context, tx *store.Tx, emailID, workspaceID string, data []byte, now time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO outbound_messages (email_id, workspace_id, data, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (email_id) DO NOTHING`, emailID, workspaceID, data, store.Millis(now))
	return err
}

// dropSigned forgets an email's signed message once it is owed nothing.
func dropSigned(ctx context.Context, tx *store.Tx, emailID string) error {
	_, err := tx.Exec(ctx, `DELETE FROM outbound_messages WHERE email_id = ?`, emailID)
	return err
}

// keptSigned reads the signed message kept for a retry, or
// store.ErrNotFound.
func keptSigned(ctx context.Context, q store.Querier, emailID string) ([]byte, error) {
	var raw []byte
	err := q.QueryRow(ctx, `SELECT data FROM outbound_messages WHERE email_id = ?`, emailID).Scan(&raw)
	return raw, err
}
