package sending

import "context"

// Attachments reads a sent email's attachments from its stored body, in
// the order the send gave them, for a caller that may read the email (a
// send-only key reads its own). Once retention purged the body there are
// none.
func (s *Service) Attachments(ctx context.Context, c Caller, id string) ([]StoredAttachment, error) {
	row, err := s.readFull(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return row.Attachments, nil
}
