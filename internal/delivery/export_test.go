package delivery

import (
	"context"

	"mailroom/internal/store"
)

// DecodeRecipients is decodeRecipients, for the external tests' reads of
// emails.recipients.
func DecodeRecipients(ctx context.Context, q store.Querier, id, raw string) ([]Recipient, error) {
	return decodeRecipients(ctx, q, id, raw)
}
