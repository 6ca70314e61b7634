package inbound

import (
	"context"
	"errors"
	"net/url"
	"time"

	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// What the Resend SDKs' inboxes reach beyond the spec's routes: a mailbox
// renamed, a conversation marked or removed whole, a reply to its sender.

// RenameMailbox sets a mailbox's display name; a key bound to another
// mailbox finds none.
func (s *Service) RenameMailbox(ctx context.Context, workspaceID, boundTo, id, name string) (*Mailbox, error) {
	if boundTo != "" && id != boundTo {
		return nil, errMailboxNotFound
	}
	if err := renameMailbox(ctx, s.db, workspaceID, id, name); err != nil {
		return nil, notFound(err, errMailboxNotFound)
	}
	return s.Mailbox(ctx, workspaceID, boundTo, id)
}

// SetThreadFlags sets the flags of every message of a conversation, as
// SetFlags does for one (nil leaves a flag as it is).
func (s *Service) SetThreadFlags(ctx context.Context, rd Reader, id string, archived, unread *bool) error {
	mbx, err := rd.mailbox()
	if err != nil {
		return err
	}
	if _, err := getThread(ctx, s.db, rd.WorkspaceID, mbx, id); err != nil {
		return notFound(err, errThreadNotFound)
	}
	if archived == nil && unread == nil {
		return nil
	}
	ms, err := threadMessages(ctx, s.db, rd.WorkspaceID, mbx, id)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		for _, m := range ms {
			if err := setFlags(ctx, tx, rd.WorkspaceID, mbx, m.ID, unread, archived); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	})
}

// DeleteThread removes a conversation with its messages. It needs the
// mailbox: the reader's binding or mailbox_id.
func (s *Service) DeleteThread(ctx context.Context, rd Reader, id string) error {
	mbx, err := rd.mailbox()
	if err != nil {
		return err
	}
	if mbx == "" {
		t, err := getThread(ctx, s.db, rd.WorkspaceID, "", id)
		if err != nil {
			return notFound(err, errThreadNotFound)
		}
		mbx = t.MailboxID
	}
	err = s.db.InTx(ctx, func(tx *store.Tx) error { return deleteThread(ctx, tx, rd.WorkspaceID, mbx, id) })
	return notFound(err, errThreadNotFound)
}

// Reply answers the sender of a message alone (ReplyAll adds its other
// recipients): subject "Re: …" unless given, threaded as a reply, from the
// message's mailbox.
func (s *Service) Reply(ctx context.Context, rd Reader, c sending.Caller, id string, req Compose) (sent *Sent, err error) {
	scope, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	orig, err := getMessage(ctx, s.db, rd.WorkspaceID, scope, id)
	if err != nil {
		return nil, notFound(err, errMessageNotFound)
	}
	req.To = []string{orig.FromAddr}
	if orig.FromAddr == "" {
		req.To = []string{orig.From}
	}
	if orig.Direction == DirectionSent {
		req.To = orig.To
	}
	if req.Subject == "" {
		req.Subject = prefixed("Re: ", orig.Subject, "re:")
	}
	req.ReplyToMessageID = orig.ID
	return s.Send(ctx, rd, c, req)
}

// LastReceived is when the mailbox last received a message (nil for never).
func (s *Service) LastReceived(ctx context.Context, workspaceID, mailboxID string) (*time.Time, error) {
	return lastReceived(ctx, s.db, workspaceID, mailboxID)
}

// Raw is the received message as it arrived (not found once retention
// purged it), for the SDKs' raw download.
func (s *Service) Raw(ctx context.Context, rd Reader, id string) ([]byte, error) {
	mbx, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	raw, err := rawMessage(ctx, s.db, rd.WorkspaceID, mbx, id)
	return raw, notFound(err, errMessageNotFound)
}

// RawURL is where GET /v1/emails/receiving/{id}/raw serves a message's raw
// copy to the holder of token (no key: the SDKs fetch it bare).
func (s *Service) RawURL(messageID, token string) string {
	return s.cfg.PublicURL + "/v1/emails/receiving/" + url.PathEscape(messageID) + "/raw?token=" + url.QueryEscape(token)
}
