package inbound

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // every charset golang.org/x/text knows
	"github.com/emersion/go-message/mail"
)

// Limits of the parser: past them the rest of the message is kept in the
// raw copy only, never an error.
const (
	maxDepth     = 30   // multipart nesting followed
	maxParts     = 1000 // parts looked at
	maxHeaderLen = 2 << 20
	snippetLen   = 200
)

// Parsed is what the receiving side keeps of a message.
type Parsed struct {
	FromAddr    string // From header address ("" when none parses)
	FromName    string
	To, Cc      []string
	Subject     string
	Date        string // as the sender wrote it
	MessageID   string // without angle brackets
	InReplyTo   string
	References  []string
	ListID      string
	Headers     map[string]string // lowercased keys, repeats joined with "; "
	Text, HTML  *string
	Parts       []Part
	Automated   bool
	MultiReport bool // multipart/report (a DSN or ARF report)
}

// Part is an attachment or an inline image.
type Part struct {
	Filename    string // unique within the message; never a path
	ContentType string
	ContentID   string // without angle brackets; "" when none
	Inline      bool   // an image referenced from the html with cid:
	Size        int
	Data        []byte // nil when read back from the store (the bytes stay there)
}

// Parse reads a message as received. It never fails on content: broken
// charsets, encodings, nesting or headers give what could be read. Only a
// header block that cannot be read at all is an error.
func Parse(raw []byte) (*Parsed, error) {
	e, err := message.ReadWithOptions(bytes.NewReader(raw), &message.ReadOptions{MaxHeaderBytes: maxHeaderLen})
	if e == nil {
		return nil, fmt.Errorf("unreadable header: %w", err)
	}
	p := &Parsed{Headers: map[string]string{}, To: []string{}, Cc: []string{}, References: []string{}}
	h := mail.Header{Header: e.Header}
	fields := h.Fields()
	for fields.Next() {
		k := strings.ToLower(fields.Key())
		v, err := fields.Text()
		if err != nil {
			v = fields.Value()
		}
		v = clean(v)
		if old, ok := p.Headers[k]; ok {
			v = old + "; " + v
		}
		p.Headers[k] = v
	}
	if from := addresses(h, "From"); len(from) > 0 {
		p.FromAddr, p.FromName = from[0].Address, from[0].Name
	}
	for _, a := range addresses(h, "To") {
		p.To = append(p.To, a.Address)
	}
	for _, a := range addresses(h, "Cc") {
		p.Cc = append(p.Cc, a.Address)
	}
	if s, err := h.Subject(); err == nil {
		p.Subject = clean(s)
	} else {
		p.Subject = clean(h.Get("Subject"))
	}
	p.Date = clean(strings.TrimSpace(h.Get("Date")))
	p.MessageID = msgID(h.Get("Message-Id"))
	p.InReplyTo = msgID(h.Get("In-Reply-To"))
	if refs, err := h.MsgIDList("References"); err == nil {
		for _, r := range refs {
			p.References = append(p.References, clean(r))
		}
	} else {
		for _, r := range strings.Fields(h.Get("References")) {
			if r = msgID(r); r != "" {
				p.References = append(p.References, r)
			}
		}
	}
	p.ListID = clean(strings.TrimSpace(h.Get("List-Id")))
	p.Automated = automated(h)

	w := walker{p: p, names: map[string]bool{}}
	w.walk(e, 0, err)
	if p.Text == nil && p.HTML == nil && len(p.Parts) == 0 && w.count == 0 {
		// Nothing readable: keep the raw body as text.
		if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
			t := clean(string(raw[i+4:]))
			p.Text = &t
		}
	}
	// Inline images are those the html names with cid:; other parts with
	// a Content-ID are attachments.
	for i := range p.Parts {
		pt := &p.Parts[i]
		pt.Inline = pt.ContentID != "" && p.HTML != nil && strings.HasPrefix(pt.ContentType, "image/") &&
			strings.Contains(*p.HTML, "cid:"+pt.ContentID)
	}
	return p, nil
}

type walker struct {
	p     *Parsed
	count int
	names map[string]bool
}

func (w *walker) walk(e *message.Entity, depth int, readErr error) {
	if w.count >= maxParts {
		return
	}
	w.count++
	ct, params, cterr := e.Header.ContentType()
	if cterr != nil || ct == "" {
		ct = "text/plain"
	}
	ct = strings.ToLower(ct)
	if ct == "multipart/report" && depth == 0 {
		w.p.MultiReport = true
	}
	if mr := e.MultipartReader(); mr != nil {
		if depth >= maxDepth {
			return
		}
		for {
			part, err := mr.NextPart()
			if part == nil || errors.Is(err, io.EOF) {
				return
			}
			if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
				return
			}
			w.walk(part, depth+1, err)
			if w.count >= maxParts {
				return
			}
		}
	}
	body, err := io.ReadAll(io.LimitReader(e.Body, 64<<20))
	if err != nil && len(body) == 0 {
		return // an encoding that broke at once: nothing to keep
	}
	if readErr != nil && message.IsUnknownEncoding(readErr) {
		// Kept as it came.
		_ = readErr
	}
	disp, dparams, _ := e.Header.ContentDisposition()
	filename := dparams["filename"]
	if filename == "" {
		filename = params["name"]
	}
	attachment := strings.EqualFold(disp, "attachment") || filename != ""
	if !attachment && (ct == "text/plain" || ct == "text/html") {
		s := clean(string(body))
		if ct == "text/plain" && w.p.Text == nil {
			w.p.Text = &s
			return
		}
		if ct == "text/html" && w.p.HTML == nil {
			w.p.HTML = &s
			return
		}
	}
	if depth == 0 && !attachment && strings.HasPrefix(ct, "text/") {
		s := clean(string(body))
		w.p.Text = &s
		return
	}
	cid := msgID(e.Header.Get("Content-Id"))
	w.p.Parts = append(w.p.Parts, Part{Filename: w.name(filename, ct), ContentType: ct, ContentID: clean(cid), Size: len(body), Data: body})
}

// name makes a part's filename safe and unique in the message: the last
// path element only, no control characters or NULs, at most 200 bytes.
func (w *walker) name(raw, ct string) string {
	raw = strings.ReplaceAll(raw, "\\", "/")
	n := path.Base("/" + raw)
	n = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) || r == '/' {
			return -1
		}
		return r
	}, clean(n))
	n = strings.TrimSpace(n)
	if n == "/" || n == "." || n == ".." || n == "" {
		n = "attachment"
		if exts, _ := mime.ExtensionsByType(ct); len(exts) > 0 {
			n += exts[0]
		} else if ct == "message/rfc822" {
			n += ".eml"
		}
	}
	for len(n) > 200 {
		_, size := utf8.DecodeLastRuneInString(n)
		n = n[:len(n)-size]
	}
	base, ext := n, path.Ext(n)
	if len(ext) < len(n) {
		base = strings.TrimSuffix(n, ext)
	} else {
		ext = ""
	}
	for i := 2; w.names[n]; i++ {
		n = fmt.Sprintf("%s (%d)%s", base, i, ext)
	}
	w.names[n] = true
	return n
}

func addresses(h mail.Header, key string) []*mail.Address {
	if list, err := h.AddressList(key); err == nil {
		for _, a := range list {
			a.Address, a.Name = clean(strings.ToLower(a.Address)), clean(a.Name)
		}
		return list
	}
	// Lenient: anything that looks like an address.
	var out []*mail.Address
	for _, m := range looseAddr.FindAllString(h.Get(key), 50) {
		out = append(out, &mail.Address{Address: clean(strings.ToLower(m))})
	}
	return out
}

var looseAddr = regexp.MustCompile(`[^\s<>,;:"()\[\]@]+@[^\s<>,;:"()\[\]@]+`)

func msgID(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '<'); i >= 0 {
		if j := strings.IndexByte(v[i:], '>'); j > 0 {
			v = v[i+1 : i+j]
		}
	}
	return clean(strings.TrimSpace(v))
}

// clean makes text storable in both databases: valid UTF-8 without NULs.
func clean(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// automated reports a bounce or an auto-reply from its headers (RFC 3834
// Auto-Submitted, Precedence, and the usual vendor headers).
func automated(h mail.Header) bool {
	if v := strings.ToLower(strings.TrimSpace(h.Get("Auto-Submitted"))); v != "" && v != "no" {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(h.Get("Precedence"))) {
	case "bulk", "junk", "list", "auto_reply", "auto-reply":
		return true
	}
	for _, k := range []string{"X-Autoreply", "X-Autorespond", "X-Auto-Reply", "X-Autogenerated", "X-AutoReply-From", "X-Mail-Autoreply", "X-FC-MachineGenerated", "X-Loop"} {
		if h.Get(k) != "" {
			return true
		}
	}
	if strings.EqualFold(strings.TrimSpace(h.Get("X-Auto-Response-Suppress")), "All") && h.Get("X-MS-Exchange-Generated-Message-Source") != "" {
		return true
	}
	ct, _, _ := h.ContentType()
	if strings.EqualFold(ct, "multipart/report") {
		return true
	}
	from := strings.ToLower(h.Get("From"))
	return strings.Contains(from, "mailer-daemon@") || strings.Contains(from, "postmaster@")
}

// snippet is the first line or so of the text body (or the html's text).
func snippet(text, html *string) string {
	var s string
	switch {
	case text != nil && strings.TrimSpace(*text) != "":
		s = *text
	case html != nil:
		s = tagRE.ReplaceAllString(*html, " ")
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > snippetLen {
		cut := snippetLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

var tagRE = regexp.MustCompile(`(?s)<style.*?</style>|<script.*?</script>|<[^>]*>`)

// subjectKey is the subject without reply and forward prefixes, lowercased.
func subjectKey(s string) (key string, reply bool) {
	s = strings.TrimSpace(s)
	for {
		low := strings.ToLower(s)
		cut := false
		for _, p := range []string{"re:", "fw:", "fwd:", "aw:", "sv:", "wg:", "tr:", "re :", "fwd :"} {
			if strings.HasPrefix(low, p) {
				s, cut, reply = strings.TrimSpace(s[len(p):]), true, true
				break
			}
		}
		if !cut {
			break
		}
	}
	return strings.ToLower(strings.Join(strings.Fields(s), " ")), reply
}
