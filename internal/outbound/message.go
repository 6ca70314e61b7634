package outbound

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"mailroom/internal/mailauth"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
)

// Address is a mailbox: an optional display name and an addr-spec.
type Address struct {
	Name    string
	Address string
}

// Attachment is one file carried in a multipart/mixed message.
type Attachment struct {
	Filename string
	// ContentType is sniffed from the file name, then from the bytes, when
	// empty.
	ContentType string
	Data        []byte
	// ContentID makes it an inline image of the HTML (which shows it as
	// cid:<ContentID>): it goes in a multipart/related beside the HTML.
	ContentID string
}

// Message is everything Build needs to produce an RFC 5322 message.
type Message struct {
	From    Address
	To      []Address
	Cc      []Address
	Bcc     []Address // envelope only; never written to the header
	ReplyTo []Address
	Subject string
	HTML    string
	Text    string
	// Headers are extra header fields such as In-Reply-To, References or
	// X-Entity-Ref-ID. Fields Build writes itself are refused.
	Headers     map[string]string
	Attachments []Attachment
	// MessageID is written as given, with or without angle brackets; when
	// empty Build generates one on the From domain.
	MessageID string
	// Date is required: Build never reads the clock.
	Date time.Time
	// FeedbackID is written as the Feedback-ID header (Gmail's feedback
	// loop: "a:b:c:SenderId", see FeedbackID) when set.
	FeedbackID string
}

// ErrHeaderInjection is returned when a header value would end the field
// early (CR or LF) and so let a caller forge other header fields.
var ErrHeaderInjection = errors.New("outbound: header value contains CR or LF")

// reservedHeaders are written by Build; letting Headers set them would allow
// spoofing or a message whose structure contradicts its Content-Type.
// Sender is the caller's to set (the sending API allows it), and so is a
// Feedback-ID of their own, which then replaces Message.FeedbackID.
var reservedHeaders = []string{
	"message-id", "date", "from", "to", "cc", "bcc", "reply-to", "subject",
	"dkim-signature", "mime-version", "content-type", "content-transfer-encoding",
	"content-disposition", "return-path",
}

// MessageIDFor is the Message-ID of a stored email: "<email id@domain>".
// It is stable (a retry after a crash carries the same id, and a returned DSN
// names it) and, since email ids are time-ordered, each new one sorts after
// the last: the message_id index grows at its right edge instead of taking a
// random leaf page per send, which was half of the pages a group commit wrote.
// Since it holds the email id, a Message-ID finds its email through the
// primary key (EmailIDOf), and emails need no index of their own on it.
func MessageIDFor(emailID, domain string) string {
	if domain == "" {
		domain = "localhost"
	}
	return "<" + emailID + "@" + domain + ">"
}

// EmailIDOf is the email id inside a Message-ID that MessageIDFor wrote, or
// false when messageID has not that shape. The id only says which row to
// read: the caller compares the stored Message-ID, so a forged one under
// another domain names nothing.
func EmailIDOf(messageID string) (string, bool) {
	at := strings.LastIndexByte(messageID, '@')
	if len(messageID) < 3 || messageID[0] != '<' || messageID[len(messageID)-1] != '>' || at < 2 {
		return "", false
	}
	return messageID[1:at], true
}

// NewMessageID returns a globally unique "<random@domain>" message id.
func NewMessageID(domain string) string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	id := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	if domain == "" {
		domain = "localhost"
	}
	return "<" + id + "@" + domain + ">"
}

// Build assembles m into wire bytes with CRLF line endings: text/plain alone,
// multipart/alternative when there is HTML (a plain part is derived from the
// HTML when Text is empty), in multipart/related with the inline images
// when there are any (RFC 2387), wrapped in multipart/mixed when there are
// attachments.
func Build(m *Message) ([]byte, error) { return AppendBuild(nil, m) }

// AppendBuild is Build appending the message to dst and returning the
// extended slice: a caller that signs each message (Sign copies it) and
// then drops it can build them all in one buffer, rather than allocate
// and clear one the size of the body per message.
func AppendBuild(dst []byte, m *Message) ([]byte, error) {
	if err := validate(m); err != nil {
		return nil, err
	}
	text := m.Text
	if text == "" && m.HTML != "" {
		t, buf := htmlText(textBufs.Get(), m.HTML)
		defer textBufs.Put(buf)
		// Read only while the message is written, before buf is reused.
		text = unsafe.String(unsafe.SliceData(t), len(t))
	}
	buf := bytes.NewBuffer(dst)
	buf.Grow(len(m.HTML) + 2*len(text) + 1024 + attachmentsSize(m.Attachments))
	inline, files := splitInline(m)
	if len(inline) == 0 && len(m.Attachments) == 0 {
		var room [16]field
		h := fields{l: room[:0]}
		fillHeader(&h, m)
		writeInline(buf, &h, text, m.HTML)
		return buf.Bytes(), nil
	}
	h, err := header(m)
	if err != nil {
		return nil, err
	}
	if len(inline) > 0 {
		if err := buildRelated(buf, h, text, m.HTML, inline, files); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}

	mw, err := mail.CreateWriter(buf, h)
	if err != nil {
		return nil, err
	}
	if m.HTML == "" {
		w, err := mw.CreateSingleInline(textPart("text/plain", text))
		if err != nil {
			return nil, err
		}
		if err := writeClose(w, text); err != nil {
			return nil, err
		}
	} else {
		iw, err := mw.CreateInline()
		if err != nil {
			return nil, err
		}
		if err := writeAlternatives(iw, text, m.HTML); err != nil {
			return nil, err
		}
	}
	for _, a := range m.Attachments {
		if err := writeAttachment(mw, a); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// textBufs hold text parts derived from html while their message is built.
var textBufs Buffers

func header(m *Message) (mail.Header, error) {
	var h mail.Header
	fillHeader(&h, m)
	return h, nil
}

// headerSetter is what fillHeader writes to: a *mail.Header, or the
// *fields of a message writeInline writes.
type headerSetter interface {
	Set(k, v string)
	Del(k string)
	AddRaw(kv []byte)
	SetDate(t time.Time)
	SetMessageID(id string)
}

// fillHeader sets m's header fields in h.
func fillHeader(h headerSetter, m *Message) {
	h.SetDate(m.Date)
	setField(h, "From", addressList("From", []Address{m.From}))
	if len(m.To) > 0 {
		setField(h, "To", addressList("To", m.To))
	}
	if len(m.Cc) > 0 {
		setField(h, "Cc", addressList("Cc", m.Cc))
	}
	if len(m.ReplyTo) > 0 {
		setField(h, "Reply-To", addressList("Reply-To", m.ReplyTo))
	}
	setField(h, "Subject", encodedWords("Subject", m.Subject))
	id := strings.TrimSuffix(strings.TrimPrefix(m.MessageID, "<"), ">")
	if id == "" {
		id = strings.Trim(NewMessageID(mailauth.DomainOf(m.From.Address)), "<>")
	}
	h.SetMessageID(id)
	h.Set("MIME-Version", "1.0")
	if m.FeedbackID != "" && !hasKey(m.Headers, "Feedback-ID") {
		h.Set("Feedback-ID", m.FeedbackID)
	}
	// Sorted so that the same Message always yields the same bytes.
	keys := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		setField(h, k, encodedWords(k, m.Headers[k]))
	}
}

// FeedbackID is the Feedback-ID value for Gmail's feedback loop
// ("CustomerID:MailType:SenderId"): complaint rates are then reported per
// workspace and per mail class (transactional or marketing) under the
// installation's sender id, so one workspace's bad list is visible as its
// own. Colons would shift the fields, so they are dropped from the parts.
func FeedbackID(workspaceID, mailClass, senderID string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == ':' || r <= ' ' || r > '~' {
				return -1
			}
			return r
		}, s)
	}
	return clean(workspaceID) + ":" + clean(mailClass) + ":" + clean(senderID)
}

func validate(m *Message) error {
	if m.From.Address == "" {
		return errors.New("outbound: From address is required")
	}
	if m.Date.IsZero() {
		return errors.New("outbound: Date is required")
	}
	if len(m.To)+len(m.Cc)+len(m.Bcc) == 0 {
		return errors.New("outbound: at least one recipient is required")
	}
	crlf := func(s ...string) bool {
		for _, s := range s {
			if strings.ContainsAny(s, "\r\n") {
				return true
			}
		}
		return false
	}
	if crlf(m.Subject, m.MessageID, m.From.Name, m.From.Address) {
		return ErrHeaderInjection
	}
	for _, l := range [...][]Address{m.To, m.Cc, m.Bcc, m.ReplyTo} {
		for _, a := range l {
			if crlf(a.Name, a.Address) {
				return ErrHeaderInjection
			}
		}
	}
	for _, a := range m.Attachments {
		if crlf(a.Filename, a.ContentType, a.ContentID) {
			return ErrHeaderInjection
		}
	}
	for k, v := range m.Headers {
		if !validHeaderName(k) {
			return fmt.Errorf("outbound: invalid header name %q", k)
		}
		if slices.Contains(reservedHeaders, strings.ToLower(k)) {
			return fmt.Errorf("outbound: header %q is written by the service", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return ErrHeaderInjection
		}
	}
	return nil
}

// validHeaderName follows RFC 5322 section 3.6.8: printable ASCII except
// colon.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 33 || c > 126 || c == ':' {
			return false
		}
	}
	return true
}

// setText makes h the header of a text part of type typ holding body.
func setText(h *message.Header, typ, body string) {
	h.SetContentType(typ, map[string]string{"charset": "utf-8"})
	h.Set("Content-Transfer-Encoding", transferEncoding(body))
}

// transferEncoding is 7bit for a body that needs no encoding (ASCII
// without NUL or a lone CR, no line over RFC 5322's 998 octets; go-message
// writes its line ends as CRLF) and quoted-printable for any other: most
// bodies are plain ASCII, and encoding them only made them longer while
// costing a tenth of a broadcast's CPU outside the signature (profiled).
func transferEncoding(body string) string {
	for len(body) > 0 {
		line := body
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			line, body = strings.TrimSuffix(body[:i], "\r"), body[i+1:]
		} else {
			body = ""
		}
		if len(line) > 998 || !sevenBit(line) {
			return "quoted-printable"
		}
	}
	return "7bit"
}

// sevenBit reports whether s has only ASCII bytes other than NUL and CR,
// eight bytes at a time (a body is mostly long runs of such bytes).
func sevenBit(s string) bool {
	const ones, highs, crs = 0x0101010101010101, 0x8080808080808080, 0x0d0d0d0d0d0d0d0d
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		cr := w ^ crs
		// A high bit, a zero byte or a CR byte (zero after the XOR).
		if w&highs != 0 || (w-ones)&^w&highs != 0 || (cr-ones)&^cr&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == 0 || c == '\r' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// plainASCII reports whether s has only ASCII bytes other than NUL and
// CR, as sevenBit, but looking for NUL and CR with the runtime's
// IndexByte and ORing the words for the high bits: a few instructions a
// word rather than a dozen.
func plainASCII(s string) bool {
	if strings.IndexByte(s, '\r') >= 0 || strings.IndexByte(s, 0) >= 0 {
		return false
	}
	var or uint64
	i := 0
	for ; i+32 <= len(s); i += 32 {
		or |= word(s, i) | word(s, i+8) | word(s, i+16) | word(s, i+24)
	}
	for ; i < len(s); i++ {
		or |= uint64(s[i])
	}
	return or&0x8080808080808080 == 0
}

// word is the eight bytes of s at i, little-endian (one load where the
// machine allows it).
func word(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// textPart is the header of a text part holding body.
func textPart(typ, body string) mail.InlineHeader {
	var ih mail.InlineHeader
	setText(&ih.Header, typ, body)
	return ih
}

func writeAlternatives(iw *mail.InlineWriter, text, html string) error {
	// Least preferred first (RFC 2046 section 5.1.4).
	for _, p := range []struct{ typ, body string }{{"text/plain", text}, {"text/html", html}} {
		ih := textPart(p.typ, p.body)
		w, err := iw.CreatePart(ih)
		if err != nil {
			return err
		}
		if err := writeClose(w, p.body); err != nil {
			return err
		}
	}
	return iw.Close()
}

func writeAttachment(mw *mail.Writer, a Attachment) error {
	h, err := partHeader(a, "attachment")
	if err != nil {
		return err
	}
	w, err := mw.CreateAttachment(mail.AttachmentHeader{Header: h})
	if err != nil {
		return err
	}
	if _, err := w.Write(a.Data); err != nil {
		return err
	}
	return w.Close()
}

// partHeader is the header of a file's part: its type (sniffed when not
// given) and name, disposition (attachment or inline), transfer encoding.
func partHeader(a Attachment, disposition string) (message.Header, error) {
	ct := a.ContentType
	if ct == "" {
		ct = mime.TypeByExtension(strings.ToLower(path.Ext(a.Filename)))
	}
	if ct == "" {
		ct = http.DetectContentType(a.Data)
	}
	typ, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return message.Header{}, fmt.Errorf("outbound: attachment %q: content type %q: %w", a.Filename, ct, err)
	}
	var ah message.Header
	delete(params, "name")
	setField(&ah, "Content-Type", attachmentParams(typ, params, "name", a.Filename))
	if a.Filename != "" {
		setField(&ah, "Content-Disposition", attachmentParams(disposition, nil, "filename", a.Filename))
	} else {
		ah.Set("Content-Disposition", disposition)
	}
	cte := "base64"
	if strings.HasPrefix(typ, "message/") {
		// RFC 2046 §5.2.1: a message/rfc822 part is never base64 (readers
		// take it for garbage): 7bit when it is, else 8bit.
		cte = "7bit"
		if !sevenBit(strings.ReplaceAll(string(a.Data), "\r\n", "\n")) {
			cte = "8bit"
		}
	}
	ah.Set("Content-Transfer-Encoding", cte)
	return ah, nil
}

func writeClose(w io.WriteCloser, s string) error {
	if _, err := io.WriteString(w, s); err != nil {
		return err
	}
	return w.Close()
}

func toMail(l []Address) []*mail.Address {
	out := make([]*mail.Address, len(l))
	for i, a := range l {
		out[i] = &mail.Address{Name: a.Name, Address: a.Address}
	}
	return out
}

func attachmentsSize(l []Attachment) int {
	n := 0
	for _, a := range l {
		n += len(a.Data)*4/3 + 256
	}
	return n
}

func hasKey(m map[string]string, k string) bool {
	for key := range m {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}
