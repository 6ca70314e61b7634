package inbound

import (
	"time"
)

// Directions of a stored message.
const (
	DirectionReceived = "received"
	DirectionSent     = "sent"
)

// Message is a stored message: the parsed fields and what receiving (or
// sending) decided.
type Message struct {
	Parsed
	ID          string
	WorkspaceID string
	MailboxID   string
	Mailbox     string // the mailbox's address
	ThreadID    string
	Direction   string
	MailFrom    string // envelope sender
	From        string // envelope sender, or the From address when the envelope's is null
	Snippet     string
	SpamVerdict string
	Auth        Auth
	Unread      bool
	Archived    bool
	Size        int64
	EmailID     string // the sent email behind a sent message
	ReceivedAt  time.Time
}

// AttachmentJSON is one entry of attachments[].
type AttachmentJSON struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int    `json:"size"`
	URL         string `json:"url"`
}

// InlineImageJSON is one entry of inline_images[].
type InlineImageJSON struct {
	Filename    string `json:"filename"`
	ContentID   string `json:"content_id"`
	ContentType string `json:"content_type"`
	Size        int    `json:"size"`
}

// Payload is the email.received data (the spec's payload table), also the
// body of GET /v1/messages/{id} with the flags beside it.
type Payload struct {
	MessageID       string            `json:"message_id"`
	ThreadID        string            `json:"thread_id"`
	Mailbox         string            `json:"mailbox"`
	From            string            `json:"from"`
	FromName        *string           `json:"from_name"`
	To              []string          `json:"to"`
	Cc              []string          `json:"cc"`
	Subject         string            `json:"subject"`
	Snippet         string            `json:"snippet"`
	Text            *string           `json:"text"`
	HTML            *string           `json:"html"`
	Date            *string           `json:"date"`
	MessageIDHeader *string           `json:"message_id_header"`
	InReplyTo       *string           `json:"in_reply_to"`
	References      []string          `json:"references"`
	ListID          *string           `json:"list_id"`
	Headers         map[string]string `json:"headers"`
	SpamVerdict     string            `json:"spam_verdict"`
	Auth            Auth              `json:"auth"`
	Automated       bool              `json:"automated"`
	Attachments     []AttachmentJSON  `json:"attachments"`
	InlineImages    []InlineImageJSON `json:"inline_images"`
}

// Payload builds the email.received data of m.
func (s *Service) Payload(m *Message) Payload { return payload(m, s.cfg.PublicURL) }

// payload is the email.received data of m, its attachments' URLs under
// publicURL.
func payload(m *Message, publicURL string) Payload {
	p := Payload{
		MessageID: m.ID, ThreadID: m.ThreadID, Mailbox: m.Mailbox, From: m.From, FromName: nullable(m.FromName),
		To: m.To, Cc: m.Cc, Subject: m.Subject, Snippet: m.Snippet, Text: m.Text, HTML: m.HTML,
		Date: nullable(m.Date), MessageIDHeader: nullable(m.MessageID), InReplyTo: nullable(m.InReplyTo),
		References: m.References, ListID: nullable(m.ListID), Headers: m.Headers, SpamVerdict: m.SpamVerdict,
		Auth: m.Auth, Automated: m.Automated, Attachments: []AttachmentJSON{}, InlineImages: []InlineImageJSON{},
	}
	if p.To == nil {
		p.To = []string{}
	}
	if p.Cc == nil {
		p.Cc = []string{}
	}
	if p.References == nil {
		p.References = []string{}
	}
	if p.Headers == nil {
		p.Headers = map[string]string{}
	}
	for _, pt := range m.Parts {
		if pt.Inline {
			p.InlineImages = append(p.InlineImages, InlineImageJSON{Filename: pt.Filename, ContentID: pt.ContentID, ContentType: pt.ContentType, Size: pt.Size})
			continue
		}
		p.Attachments = append(p.Attachments, AttachmentJSON{Filename: pt.Filename, ContentType: pt.ContentType, Size: pt.Size, URL: attachmentURL(publicURL, m.ID, pt.Filename)})
	}
	return p
}
