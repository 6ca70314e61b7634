package sending

import (
	"context"
	"fmt"
	"time"

	"mailroom/internal/outbound"
	"mailroom/internal/store"
)

// Stored is an accepted email as the delivery engine needs it.
type Stored struct {
	ID          string
	WorkspaceID string
	Status      EmailStatus
	TestMode    bool
	Recipients  []string // bare, lowercased: the envelope (to, cc and bcc)
	MessageID   string   // "<...@from-domain>", minted at booking
	EventData   map[string]any
	Message     *outbound.Message
}

// Load reads an accepted email and assembles its outbound.Message (the same
// assembly the booking used to check the 40 MB limit). date is the Date
// header to write. A missing email answers store.ErrNotFound.
func Load(ctx context.Context, db *store.DB, workspaceID, emailID string, date time.Time) (*Stored, error) {
	e, err := loadFull(ctx, db, Caller{WorkspaceID: workspaceID}, emailID)
	if err != nil {
		return nil, err
	}
	parse := func(l []string) ([]Address, error) {
		out := make([]Address, 0, len(l))
		for _, s := range l {
			a, err := ParseAddress(s)
			if err != nil {
				return nil, fmt.Errorf("email %s: stored address %q: %w", e.ID, s, err)
			}
			out = append(out, a)
		}
		return out, nil
	}
	from, err := ParseAddress(e.From)
	if err != nil {
		return nil, fmt.Errorf("email %s: stored from %q: %w", e.ID, e.From, err)
	}
	var lists [4][]Address
	for i, l := range [][]string{e.To, e.Cc, e.Bcc, e.ReplyTo} {
		if lists[i], err = parse(l); err != nil {
			return nil, err
		}
	}
	atts := make([]Attachment, len(e.Attachments))
	for i, a := range e.Attachments {
		atts[i] = Attachment(a)
	}
	return &Stored{
		ID: e.ID, WorkspaceID: e.WorkspaceID, Status: e.Status, TestMode: e.TestMode,
		Recipients: e.Recipients, MessageID: e.MessageID, EventData: e.eventData(),
		Message: outboundMessage(from, lists[0], lists[1], lists[2], lists[3], e.Subject, e.HTML, e.Text, e.Headers, atts, e.MessageID, date),
	}, nil
}
