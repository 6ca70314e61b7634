package inbound

import (
	"context"
	"encoding/json"
	"strings"

	"mailroom/internal/apierr"
	"mailroom/internal/ids"
	"mailroom/internal/mailauth"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
)

// Limits of POST /v1/messages (the spec's).
const (
	maxComposeTo          = 50
	maxComposeCc          = 50
	maxComposeAttachments = 10
)

// Sender books an email: the sending service, which validates, applies
// policy and suppressions and commits the email with its delivery job (and,
// through o.InTx, with inbound's sent copy or booking).
type Sender interface {
	SendWith(ctx context.Context, c sending.Caller, raw []byte, o sending.SendOptions) (sending.Outcome, error)
}

// SetSender hands in the sending service (wired after inbound).
func (s *Service) SetSender(snd Sender) { s.sender = snd }

// ComposeAttachment is one attachments[] entry of POST /v1/messages.
type ComposeAttachment struct {
	Filename      string `json:"filename"`
	ContentType   string `json:"content_type,omitempty"`
	ContentBase64 string `json:"content_base64"`
}

// Compose is POST /v1/messages.
type Compose struct {
	To               []string
	Cc               []string
	Subject          string
	Body             string
	ReplyToMessageID string
	Attachments      []ComposeAttachment
	TrackOpens       *bool
	SendAt           string

	asMailbox string // a forward goes out from the forwarded message's mailbox
	text      string // the text part when the body as written is not it (an inline forward's escaped headers)
}

// Sent is the outcome of a compose: sent now with the stored sent
// message, or booked for later (Booked) with the sending service's id.
type Sent struct {
	MessageID   string // "" when booked
	ThreadID    string // "" when booked
	EmailID     string
	ScheduledID string // "" when sent now
	Status      string
}

// Send is POST /v1/messages: the body rendered from markdown, the email
// booked through the sending service as the reader's mailbox, and (when
// it goes now) a sent copy stored in the conversation it answers, or a new
// one. Nothing is held for review (docs/decisions.md).
func (s *Service) Send(ctx context.Context, rd Reader, c sending.Caller, req Compose) (sent *Sent, err error) {
	defer func() { err = refused(err) }()
	if err := req.check(); err != nil {
		return nil, err
	}
	scope, err := rd.mailbox()
	if err != nil {
		return nil, err
	}
	if req.asMailbox != "" {
		// A forward leaves from the mailbox that received it, signed for its domain.
		scope = req.asMailbox
	}
	var orig *Message
	if req.ReplyToMessageID != "" {
		// A reply goes out from the mailbox of the message it answers.
		orig, err = getMessage(ctx, s.db, rd.WorkspaceID, scope, req.ReplyToMessageID)
		if err != nil {
			return nil, notFound(err, errMessageNotFound)
		}
		scope = orig.MailboxID
	}
	mbx, err := s.sendingMailbox(ctx, rd.WorkspaceID, scope)
	if err != nil {
		return nil, err
	}
	html, text, err := s.renderer.Render(req.Body)
	if err != nil {
		return nil, apierr.InvalidRequest("body could not be rendered: %s.", err)
	}
	if req.text != "" {
		text = plainText(req.text)
	}
	raw, err := sendRequest(req, mbx, orig, html, text)
	if err != nil {
		return nil, err
	}
	if s.sender == nil {
		return nil, apierr.Internal()
	}
	msg, threadID := sentCopy(rd, req, mbx, orig, html, text)
	now := s.clock.Now()
	// The sent copy (or, when booked, the booking that stores it when the
	// email goes) commits in the sending service's transaction.
	out, err := s.sender.SendWith(ctx, c, raw, sending.SendOptions{CheckAtSendTime: true, InTx: func(ctx context.Context, tx *store.Tx, out sending.Outcome) error {
		msg.EmailID = out.ID
		msg.MessageID = strings.Trim(outbound.MessageIDFor(out.ID, mailauth.DomainOf(mbx.Address)), "<>")
		if out.Status == sending.StatusScheduled {
			return insertBooking(ctx, tx, msg, threadID, out.ScheduledAt, now)
		}
		msg.ReceivedAt = now
		return s.storeSent(ctx, tx, msg, threadID)
	}})
	if err != nil {
		return nil, err
	}
	if out.Status == sending.StatusScheduled {
		return &Sent{EmailID: out.ID, ScheduledID: ScheduledID(out.ID), Status: string(out.Status)}, nil
	}
	return &Sent{MessageID: msg.ID, ThreadID: msg.ThreadID, EmailID: out.ID, Status: string(out.Status)}, nil
}

// check holds a compose to the spec's limits before anything is read.
func (req *Compose) check() error {
	switch {
	case len(req.To) == 0:
		return apierr.InvalidRequest("to is required: 1 to %d addresses.", maxComposeTo)
	case len(req.To) > maxComposeTo:
		return apierr.InvalidRequest("to has %d addresses; at most %d are allowed.", len(req.To), maxComposeTo)
	case len(req.Cc) > maxComposeCc:
		return apierr.InvalidRequest("cc has %d addresses; at most %d are allowed.", len(req.Cc), maxComposeCc)
	case strings.TrimSpace(req.Subject) == "":
		return apierr.InvalidRequest("subject is required.")
	case strings.TrimSpace(req.Body) == "":
		return apierr.InvalidRequest("body is required.")
	case len(req.Body) > maxBody:
		return apierr.InvalidRequest("body is longer than %d bytes.", maxBody)
	case len(req.Attachments) > maxComposeAttachments:
		return apierr.InvalidRequest("attachments has %d entries; at most %d are allowed.", len(req.Attachments), maxComposeAttachments)
	}
	return nil
}

// sendRequest is the compose as the sending service reads a POST /v1/emails
// body: from the mailbox, and threaded under orig when it answers one.
func sendRequest(req Compose, mbx *Mailbox, orig *Message, html, text string) ([]byte, error) {
	from := mbx.Address
	if mbx.Name != "" {
		from = mbx.Name + " <" + mbx.Address + ">"
	}
	send := map[string]any{"from": from, "to": req.To, "subject": req.Subject, "html": html, "text": text}
	if len(req.Cc) > 0 {
		send["cc"] = req.Cc
	}
	if orig != nil && orig.MessageID != "" {
		refs := make([]string, 0, len(orig.References)+1)
		for _, r := range append(append([]string{}, orig.References...), orig.MessageID) {
			refs = append(refs, "<"+r+">")
		}
		send["headers"] = map[string]string{"In-Reply-To": "<" + orig.MessageID + ">", "References": strings.Join(refs, " ")}
	}
	if len(req.Attachments) > 0 {
		send["attachments"] = req.Attachments
	}
	if req.TrackOpens != nil {
		send["track_opens"] = *req.TrackOpens
	}
	if req.SendAt != "" {
		send["send_at"] = req.SendAt
	}
	return json.Marshal(send)
}

// sentCopy is the message stored in the mailbox for what the compose sends,
// and the conversation it joins ("" for a new one); its ids come when the
// sending service has booked the email.
func sentCopy(rd Reader, req Compose, mbx *Mailbox, orig *Message, html, text string) (*Message, string) {
	msg := &Message{
		ID: ids.New("msg"), WorkspaceID: rd.WorkspaceID, MailboxID: mbx.ID, Mailbox: mbx.Address, Direction: DirectionSent,
		MailFrom: mbx.Address, From: mbx.Address, Auth: Auth{SPF: authNone, DKIM: authNone, DMARC: authNone},
		SpamVerdict: VerdictUnchecked,
		Parsed: Parsed{FromAddr: mbx.Address, FromName: mbx.Name, To: req.To, Cc: req.Cc, Subject: req.Subject, Text: &text, HTML: &html,
			Headers: map[string]string{}, References: []string{}},
	}
	if msg.Cc == nil {
		msg.Cc = []string{}
	}
	threadID := ""
	if orig != nil {
		threadID = orig.ThreadID
		msg.InReplyTo = orig.MessageID
		msg.References = append(append([]string{}, orig.References...), orig.MessageID)
		if orig.MessageID == "" {
			msg.References = orig.References
		}
	}
	for _, a := range req.Attachments {
		msg.Parts = append(msg.Parts, Part{Filename: a.Filename, ContentType: a.ContentType})
	}
	msg.Snippet = snippet(msg.Text, msg.HTML)
	return msg, threadID
}

// Booked says the message waits for its time (the API answers 202).
func (s *Sent) Booked() bool { return s.ScheduledID != "" }

// refused is a receive-side send's refusal as the spec's rows answer it:
// 422 with the reason's code; authentication, not-found and server errors
// keep theirs.
func refused(err error) error {
	ae, ok := apierr.As(err)
	if !ok || ae.Status == apierr.StatusUnauthorized || ae.Status == apierr.StatusNotFound || ae.Status == apierr.StatusUnprocessableEntity ||
		ae.Status >= apierr.StatusInternalServerError {
		return err
	}
	c := *ae
	c.Status = apierr.StatusUnprocessableEntity
	return &c
}

// storeSent stores a sent copy in the conversation it answers (threadID),
// or by the usual threading when that is "" or gone.
func (s *Service) storeSent(ctx context.Context, tx *store.Tx, msg *Message, threadID string) error {
	joined := false
	if threadID != "" {
		var err error
		if joined, err = touchThread(ctx, tx, threadID, msg.ReceivedAt); err != nil {
			return err
		}
		msg.ThreadID = threadID
	}
	if !joined {
		if err := s.thread(ctx, tx, msg); err != nil {
			return err
		}
	}
	return insertMessage(ctx, tx, msg, nil, nil)
}

// sendingMailbox is the mailbox a compose sends as: id (the answered
// message's, the key's or mailbox_id), or the workspace's first.
func (s *Service) sendingMailbox(ctx context.Context, workspaceID, id string) (*Mailbox, error) {
	if err := s.Provision(ctx, workspaceID); err != nil {
		return nil, err
	}
	ms, err := listMailboxes(ctx, s.db, workspaceID, id)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, errMailboxNotFound
	}
	return &ms[0], nil
}
