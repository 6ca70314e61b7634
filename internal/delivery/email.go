package delivery

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/outbound"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
)

// Recipient statuses kept in emails.recipients.
const (
	RcptPending    = "pending"    // not tried yet
	RcptDeferred   = "deferred"   // temporary failure; owed another attempt
	RcptDelivered  = "delivered"  // the receiving server accepted it
	RcptBounced    = "bounced"    // refused, or temporary failures ran out
	RcptSuppressed = "suppressed" // on the suppression list at send time; never sent
	RcptComplained = "complained" // a feedback report named it after delivery
)

// Recipient is one envelope recipient's outcome, as stored in
// emails.recipients (a JSON array).
type Recipient struct {
	Email    string `json:"email"`
	Status   string `json:"status"`
	Code     int    `json:"code,omitempty"`
	Enhanced string `json:"enhanced,omitempty"`
	Message  string `json:"message,omitempty"`
	Attempts int    `json:"attempts"`
	// Stage is where the last attempt ended (outbound.Stage*).
	Stage string `json:"stage,omitempty"`

	temporary bool // this attempt's failure was temporary (not stored)
}

// UnmarshalJSON also accepts a bare address: the sending area books an
// email with its envelope as a list of addresses, and the first delivery
// attempt turns each into an outcome record.
func (r *Recipient) UnmarshalJSON(b []byte) error {
	var addr string
	if err := json.Unmarshal(b, &addr); err == nil {
		*r = Recipient{Email: addr, Status: RcptPending}
		return nil
	}
	type plain Recipient
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Recipient(p)
	return nil
}

func (r Recipient) owed() bool {
	return r.Status == RcptPending || r.Status == RcptDeferred || r.Status == ""
}

// storedAttachment is an element of emails.attachments. The sending area
// stores {filename, content_type, content_base64}; "content" (base64 too,
// as encoding/json writes []byte) is read as well.
type storedAttachment struct {
	Filename      string `json:"filename"`
	ContentType   string `json:"content_type"`
	ContentBase64 string `json:"content_base64"`
	Content       []byte `json:"content"`
	ContentID     string `json:"content_id,omitempty"` // an inline image the html shows with cid:
}

// email is the row the deliver job works from.
type email struct {
	ID, WorkspaceID      string
	claim                string // this attempt's fencing token (MarkSending), "" before it claims
	Status               sending.EmailStatus
	From                 string
	To, Cc, Bcc, ReplyTo []string
	Subject              string
	HTML, Text           string
	Headers              map[string]string
	Attachments          []storedAttachment
	Tags                 map[string]string
	TestMode             bool
	MessageID            string
	Recipients           []Recipient
	// recipientsRaw is the stored recipients array, which
	// resolveRecipients decodes (compacted: rebuilt from the attempts).
	recipientsRaw string
	// readRecipients is that array as read, kept while read is set: the
	// outcome is written in one statement while the row still holds it
	// (writeOutcome).
	readRecipients string
	read           bool
	TemplateID     string // for analytics
	BodySource     string // the body is rendered when the message is built (withBody)
	TopicID        string // a topic send: each recipient gets its own message (personal.go)
	Track          int    // tracking.TrackOpens | TrackClicks
	CreatedAt      time.Time

	// render renders the body with no read (its row was read with its
	// batch); nil: withBody reads it.
	render sending.RenderBody
	// mayKeep: an earlier attempt may have kept the signed message
	// (outbound_messages), which the final outcome then drops.
	mayKeep bool
}

// loadEmail reads an email by id from the sending area (the id is the
// scope: it is random and names one workspace's row) and decodes it.
func loadEmail(ctx context.Context, q store.Querier, id string) (*email, error) {
	o, err := sending.LoadOutgoing(ctx, q, id)
	if err != nil {
		return nil, err
	}
	e, err := decodeEmail(o)
	if err != nil {
		return nil, err
	}
	return e, e.resolveRecipients(ctx, q)
}

// resolveRecipients decodes the stored recipients array (decodeRecipients:
// a compacted one's outcomes are read from the attempts through q).
func (e *email) resolveRecipients(ctx context.Context, q store.Querier) error {
	rcpts, err := decodeRecipients(ctx, q, e.ID, e.recipientsRaw)
	if err != nil {
		return err
	}
	e.Recipients, e.recipientsRaw = rcpts, ""
	return nil
}

// decodeEmail decodes an email's JSON columns, whose shapes the delivery
// engine knows; a dry run's decoded attachments (o.Files) are taken as
// they are.
func decodeEmail(o *sending.Outgoing) (*email, error) {
	e := email{ID: o.ID, WorkspaceID: o.WorkspaceID, Status: o.Status, From: o.From, Subject: o.Subject,
		HTML: o.HTML, Text: o.Text, TestMode: o.TestMode, MessageID: o.MessageID,
		TemplateID: o.TemplateID, TopicID: o.TopicID, Track: o.Track, CreatedAt: o.CreatedAt, BodySource: o.BodySource,
		recipientsRaw: o.Recipients, readRecipients: o.Recipients, read: true}
	for _, f := range []struct {
		src string
		dst any
	}{{o.To, &e.To}, {o.Cc, &e.Cc}, {o.Bcc, &e.Bcc}, {o.ReplyTo, &e.ReplyTo}, {o.Headers, &e.Headers}, {o.Attachments, &e.Attachments}, {o.Tags, &e.Tags}} {
		if f.src == "" {
			continue
		}
		if l, ok := f.dst.(*[]string); ok && plainStrings(f.src, l) {
			continue
		}
		if err := json.Unmarshal([]byte(f.src), f.dst); err != nil {
			return nil, fmt.Errorf("delivery: email %s: malformed column: %w", e.ID, err)
		}
	}
	for _, f := range o.Files {
		e.Attachments = append(e.Attachments, storedAttachment{Filename: f.Filename, ContentType: f.ContentType, Content: f.Content, ContentID: f.ContentID})
	}
	return &e, nil
}

// plainStrings decodes src into *dst when it is a JSON array of strings
// of printable ASCII with nothing escaped (the address lists the sending
// area stores), as json.Unmarshal would; false, with *dst untouched, for
// anything else, which json.Unmarshal reads. Through reflection the lists
// were a tenth of a delivery's allocations (profiled).
func plainStrings(src string, dst *[]string) bool {
	s := trimJSONSpace(src)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return false
	}
	s = trimJSONSpace(s[1 : len(s)-1])
	out := make([]string, 0, strings.Count(s, ",")+1)
	for s != "" {
		if s[0] != '"' {
			return false
		}
		end := strings.IndexByte(s[1:], '"') + 1
		if end == 0 {
			return false
		}
		v := s[1:end]
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 || c >= 0x7f || c == '\\' {
				return false
			}
		}
		out = append(out, v)
		s = trimJSONSpace(s[end+1:])
		if s == "" {
			break
		}
		if s[0] != ',' {
			return false
		}
		if s = trimJSONSpace(s[1:]); s == "" {
			return false // a trailing comma
		}
	}
	*dst = out
	return true
}

// trimJSONSpace trims what JSON counts as whitespace.
func trimJSONSpace(s string) string {
	return strings.Trim(s, " \t\r\n")
}

// envelope lists the distinct addresses of to, cc and bcc, in that order.
func (e *email) envelope() []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range [][]string{e.To, e.Cc, e.Bcc} {
		for _, s := range l {
			a := parseAddress(s).Address
			if k := suppressions.Normalize(a); a != "" && !seen[k] {
				seen[k] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// recipients returns the stored outcomes, or a fresh pending list on the
// first attempt.
func (e *email) recipients() []Recipient {
	if len(e.Recipients) > 0 {
		return append([]Recipient(nil), e.Recipients...)
	}
	env := e.envelope()
	out := make([]Recipient, len(env))
	for i, a := range env {
		out[i] = Recipient{Email: a, Status: RcptPending}
	}
	return out
}

// fromDomain is the sending domain: the From address's domain.
func (e *email) fromDomain() string {
	a := parseAddress(e.From).Address
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		return strings.ToLower(a[i+1:])
	}
	return ""
}

// messageID is the one given at acceptance: outbound.MessageIDFor, or the
// client's own that a submission kept.
func (e *email) messageID() string {
	if e.MessageID != "" {
		return e.MessageID
	}
	return outbound.MessageIDFor(e.ID, e.fromDomain())
}

// mailClass is the Feedback-ID's mail type: marketing when the message
// carries unsubscribe headers (broadcasts, topic sends), else
// transactional.
func (e *email) mailClass() string {
	for k := range e.Headers {
		if strings.EqualFold(k, "List-Unsubscribe") {
			return "marketing"
		}
	}
	return "transactional"
}

// build assembles the message (never with a Bcc header). senderID ends its
// Feedback-ID (the installation's service domain).
func (e *email) build(now time.Time, senderID string) (*outbound.Message, error) {
	m := outbound.Message{Date: now, FeedbackID: outbound.FeedbackID(e.WorkspaceID, e.mailClass(), senderID)}
	m.From = parseAddress(e.From)
	m.To = parseAddresses(e.To)
	m.Cc = parseAddresses(e.Cc)
	m.ReplyTo = parseAddresses(e.ReplyTo)
	m.Subject = e.Subject
	m.HTML, m.Text = e.HTML, e.Text
	m.Headers = e.Headers
	m.MessageID = e.messageID()
	if len(m.To)+len(m.Cc) == 0 {
		// Build needs a recipient; a Bcc-only message goes out with its
		// envelope recipients only, and no header names them.
		m.Bcc = parseAddresses(e.Bcc)
	}
	for i, a := range e.Attachments {
		data := a.Content
		if data == nil && a.ContentBase64 != "" {
			var err error
			if data, err = decodeBase64(a.ContentBase64); err != nil {
				return nil, fmt.Errorf("attachment %d: %w", i, err)
			}
		}
		m.Attachments = append(m.Attachments, outbound.Attachment{Filename: a.Filename, ContentType: a.ContentType, Data: data, ContentID: a.ContentID})
	}
	return &m, nil
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// parseAddress reads "Name <a@b>" or a bare address as stored; something
// unparseable is used as the address itself (the sending area validated it).
// The common forms are read without net/mail (sending.SimpleAddress),
// which allocated a tenth of the objects of a delivery (profiled): each
// message reads its From several times.
func parseAddress(s string) outbound.Address {
	s = strings.TrimSpace(s)
	if name, addr, ok := sending.SimpleAddress(s); ok {
		return outbound.Address{Name: name, Address: addr}
	}
	if a, err := mail.ParseAddress(s); err == nil {
		return outbound.Address{Name: a.Name, Address: a.Address}
	}
	return outbound.Address{Address: strings.Trim(s, "<>")}
}

func parseAddresses(l []string) []outbound.Address {
	out := make([]outbound.Address, 0, len(l))
	for _, s := range l {
		out = append(out, parseAddress(s))
	}
	return out
}

// event is an email.* event of e with its analytics dimensions.
func (e *email) event(kind string, now time.Time, data map[string]any) events.Event {
	return events.Event{WorkspaceID: e.WorkspaceID, EmailID: e.ID, Type: kind, CreatedAt: now, Data: data,
		TemplateID: e.TemplateID, MailClass: e.class()}
}

// eventData is the common part of every email.* event's data.
func (e *email) eventData(to []string) map[string]any {
	return events.EmailData(e.ID, e.From, to, e.Subject, e.Tags, e.TestMode)
}

// class is the email's mail class for analytics and the mail log: a body
// rendered at delivery is a broadcast's, whose List-Unsubscribe is not
// stored.
func (e *email) class() string {
	if e.BodySource != "" {
		return sending.ClassMarketing
	}
	return sending.MailClass(e.Headers)
}

// withBody renders the body of an email stored without one (a broadcast
// recipient's) into e. A body that cannot be rendered (its template now
// refuses the recipient's data) fails the email: no retry renders it.
func (s *Service) withBody(ctx context.Context, e *email) error {
	if e.BodySource == "" {
		return nil
	}
	if s.bodies == nil {
		return permanentError{fmt.Errorf("email %s: no renderer for its body", e.ID)}
	}
	var b sending.Body
	var err error
	if e.render != nil {
		b, err = e.render(ctx, e.CreatedAt)
	} else {
		b, err = s.bodies.Body(ctx, e.WorkspaceID, e.BodySource, e.CreatedAt)
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return permanentError{fmt.Errorf("could not render: %s", ae.Message)}
	}
	if err != nil {
		return err
	}
	e.HTML, e.Text = b.HTML, b.Text
	e.Headers = sending.WithHeaders(e.Headers, b.Headers)
	return nil
}
