package sending

import (
	"context"
	"errors"

	"mailroom/internal/store"
)

// Attachments reads a sent email's attachments from its stored body, in
// the order the send gave them, for a caller that may read the email (a
// send-only key reads its own). Once retention purged the body there are
// none.
func (s *Service) Attachments(ctx context.Context, c Caller, id string) ([]StoredAttachment, error) {
	if _, err := readRow(ctx, s.db, c, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errEmailNotFound()
		}
		return nil, err
	}
	row, err := loadFull(ctx, s.db, c.WorkspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errEmailNotFound()
	}
	if err != nil {
		return nil, err
	}
	return row.Attachments, nil
}
