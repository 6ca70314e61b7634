package inbound

import (
	"context"
	"errors"

	"mailroom/internal/apierr"
	"mailroom/internal/store"
)

var (
	errMessageNotFound    = apierr.NotFound("message")
	errThreadNotFound     = apierr.NotFound("thread")
	errAttachmentNotFound = apierr.NotFound("attachment")
)

// Reader is who reads: the workspace, the mailbox a key is bound to ("" for
// an unbound key) and the mailbox_id the caller asked for ("" for all).
type Reader struct {
	WorkspaceID string
	BoundTo     string
	MailboxID   string
}

// mailbox is the one mailbox the read is kept to ("" for every mailbox of
// the workspace), or not found when a bound key names another.
func (rd Reader) mailbox() (string, error) {
	if rd.BoundTo != "" {
		if rd.MailboxID != "" && rd.MailboxID != rd.BoundTo {
			return "", errMailboxNotFound
		}
		return rd.BoundTo, nil
	}
	return rd.MailboxID, nil
}

func notFound(err, nf error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nf
	}
	return err
}

// Messages lists messages newest first (limit+1 rows are asked by callers
// that page).
func (s *Service) Messages(ctx context.Context, rd Reader, f MessageFilter) ([]*Message, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	f.MailboxID = mbx
	return listMessages(ctx, s.db, rd.WorkspaceID, f)
}

// Message reads one message in full and marks it read.
func (s *Service) Message(ctx context.Context, rd Reader, id string) (*Message, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	m, err := getMessage(ctx, s.db, rd.WorkspaceID, mbx, id)
	if err != nil {
		return nil, notFound(err, errMessageNotFound)
	}
	if m.Unread {
		read := false
		if err := setFlags(ctx, s.db, rd.WorkspaceID, mbx, id, &read, nil); err != nil {
			return nil, notFound(err, errMessageNotFound)
		}
		m.Unread = false
	}
	return m, nil
}

// SetFlags is POST /v1/messages/{id}/archive: with neither flag given the
// message is archived; archived false restores it; unread true returns it
// to the unread pile.
func (s *Service) SetFlags(ctx context.Context, rd Reader, id string, archived, unread *bool) (*Message, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	if archived == nil && unread == nil {
		t := true
		archived = &t
	}
	if err := setFlags(ctx, s.db, rd.WorkspaceID, mbx, id, unread, archived); err != nil {
		return nil, notFound(err, errMessageNotFound)
	}
	m, err := getMessage(ctx, s.db, rd.WorkspaceID, mbx, id)
	return m, notFound(err, errMessageNotFound)
}

// Attachment returns an attachment's content type and bytes.
func (s *Service) Attachment(ctx context.Context, rd Reader, id, filename string) (string, []byte, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return "", nil, err
	}
	ct, data, err := attachment(ctx, s.db, rd.WorkspaceID, mbx, id, filename)
	if !errors.Is(err, store.ErrNotFound) {
		return ct, data, err
	}
	// Received mail keeps its attachments in the raw copy only (stored
	// once, docs/performance.md): parsed again, the part of that name.
	raw, err := rawMessage(ctx, s.db, rd.WorkspaceID, mbx, id)
	if err != nil {
		return "", nil, notFound(err, errAttachmentNotFound)
	}
	for _, p := range parseKept(raw, true).Parts {
		if p.Filename == filename {
			return p.ContentType, p.Data, nil
		}
	}
	return "", nil, errAttachmentNotFound
}

// Threads lists conversations, most recent first.
func (s *Service) Threads(ctx context.Context, rd Reader, before *Position, limit int) ([]Thread, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	return listThreads(ctx, s.db, rd.WorkspaceID, mbx, before, limit)
}

// Thread reads a conversation with every message, oldest first.
func (s *Service) Thread(ctx context.Context, rd Reader, id string) (*Thread, []*Message, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, nil, err
	}
	t, err := getThread(ctx, s.db, rd.WorkspaceID, mbx, id)
	if err != nil {
		return nil, nil, notFound(err, errThreadNotFound)
	}
	ms, err := threadMessages(ctx, s.db, rd.WorkspaceID, mbx, id)
	if err != nil {
		return nil, nil, err
	}
	return &t, ms, nil
}
