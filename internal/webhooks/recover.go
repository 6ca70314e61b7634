package webhooks

import (
	"context"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// claimToken names one claim: the node's id, a dot, a random part. The
// prefix lets ReleaseClaims find a dead node's leases.
func claimToken(node string) string {
	if node == "" {
		return ids.Secret(10)
	}
	return node + "." + ids.Secret(10)
}

// ReleaseClaims puts the delivery rows leased by node (every leased row
// when node is empty: the owner of a SQLite database at start) back in the
// queue as they were before the claim, instead of leaving them until the
// lease (Lease) ends. A node that is gone made no attempt it recorded; the
// endpoint may have received one, which at-least-once delivery allows.
func ReleaseClaims(ctx context.Context, tx *store.Tx, node string) (int64, error) {
	q := `UPDATE webhook_deliveries SET due_at = next_attempt_at, claim = NULL WHERE claim IS NOT NULL`
	var args []any
	if node != "" {
		// substr, not LIKE: node ids hold '_', a LIKE wildcard.
		prefix := node + "."
		q += ` AND substr(claim, 1, ?) = ?`
		args = append(args, len(prefix), prefix)
	}
	res, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
