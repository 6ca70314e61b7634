package inbound

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // every charset golang.org/x/text knows
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"
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
func Parse(raw []byte) (*Parsed, error) { return parse(raw, true) }

// parse is Parse; without data, the parts' bytes are not kept, and a
// base64 part that becomes an attachment is measured, not decoded (the
// receiving path needs its size; a download parses the raw copy again
// with data).
func parse(raw []byte, data bool) (*Parsed, error) {
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

	w := walker{p: p, names: map[string]bool{}, data: data}
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
	data  bool // keep the parts' bytes
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
	// What e.MultipartReader tests and does, with the parts' raw bodies
	// at hand for measuring (part).
	if mt, mp, _ := e.Header.ContentType(); strings.HasPrefix(mt, "multipart/") {
		if depth >= maxDepth {
			return
		}
		mr := textproto.NewMultipartReader(e.Body, mp["boundary"])
		for {
			part, err := mr.NextPart()
			if part == nil || err != nil {
				return
			}
			w.part(part, depth+1)
			if w.count >= maxParts {
				return
			}
		}
	}
	disp, dparams, _ := e.Header.ContentDisposition()
	filename := dparams["filename"]
	if filename == "" {
		filename = params["name"]
	}
	attachment := strings.EqualFold(disp, "attachment") || filename != ""
	var body []byte
	var err error
	if w.data {
		body, err = io.ReadAll(io.LimitReader(e.Body, 64<<20))
	} else {
		// Receiving copies what it keeps (the text as a string): the
		// bytes are read into a buffer used again.
		buf := getBuffer()
		defer putBuffer(buf)
		_, err = buf.ReadFrom(io.LimitReader(e.Body, 64<<20))
		body = buf.Bytes()
	}
	if err != nil && len(body) == 0 {
		return // an encoding that broke at once: nothing to keep
	}
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
	w.attach(e.Header, filename, ct, len(body), body)
}

// attach lists a part that is no body of the message.
func (w *walker) attach(h message.Header, filename, ct string, size int, body []byte) {
	if !w.data {
		body = nil
	}
	cid := msgID(h.Get("Content-Id"))
	w.p.Parts = append(w.p.Parts, Part{Filename: w.name(filename, ct), ContentType: ct, ContentID: clean(cid), Size: size, Data: body})
}

// part walks one part of a multipart. Without data, a base64 leaf that
// can only become an attachment is measured from its encoded bytes
// (decoding 100 KB through go-message's and encoding/base64's filtering
// readers was a tenth of receiving's CPU); anything else goes through
// message.New, as go-message's own multipart reader hands it.
func (w *walker) part(p *textproto.Part, depth int) {
	h := message.Header{Header: p.Header}
	if !w.data && strings.ToLower(h.Get("Content-Transfer-Encoding")) == "base64" && w.count < maxParts {
		mt, params, err := h.ContentType()
		ct := strings.ToLower(mt)
		if err != nil || ct == "" {
			ct = "text/plain"
		}
		disp, dparams, _ := h.ContentDisposition()
		filename := dparams["filename"]
		if filename == "" {
			filename = params["name"]
		}
		attachment := strings.EqualFold(disp, "attachment") || filename != ""
		if !strings.HasPrefix(mt, "multipart/") && (attachment || !strings.HasPrefix(ct, "text/")) {
			buf := getBuffer()
			defer putBuffer(buf)
			_, err := buf.ReadFrom(io.LimitReader(p, maxEncoded))
			raw := buf.Bytes()
			if err != nil && len(raw) == 0 {
				w.count++
				return
			}
			if n, ok := base64Size(raw); ok && len(raw) < maxEncoded {
				w.count++
				w.attach(h, filename, ct, min(n, 64<<20), nil)
				return
			}
			e, err := message.New(h, io.MultiReader(bytes.NewReader(raw), p))
			w.walk(e, depth, err)
			return
		}
	}
	e, err := message.New(h, p)
	w.walk(e, depth, err)
}

// buffers hold the bytes of a part while receiving measures or copies
// them: a 100 KB attachment read by io.ReadAll allocated twice its size.
// A buffer past 1 MB is left to the collector.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		b.Reset()
		buffers.Put(b)
	}
}

// maxEncoded is past what a part's 64 MB read decodes from (base64 in
// 76-column lines), so a part measured whole was read whole.
const maxEncoded = 64 << 20 / 3 * 4 / 76 * 78 * 2

// b64 classes bytes for base64Size: 1 the alphabet, 2 whitespace (which
// go-message's decoder skips), 0 anything else ('=' included: padding is
// cut off the end first).
var b64 = func() (t [256]byte) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = 1
	}
	for _, c := range []byte(" \t\r\n") {
		t[c] = 2
	}
	return t
}()

// b64w weighs bytes for base64Size's sum: 1 the alphabet, 0 whitespace,
// 1<<32 anything else.
var b64w = func() (t [256]uint64) {
	for c, k := range b64 {
		t[c] = [3]uint64{1 << 32, 1, 0}[k]
	}
	return t
}()

// base64Size is the decoded size of well-formed base64 (whitespace
// anywhere, padding only at the end, whole quanta); ok is false for
// anything else, which is then decoded to learn what it gives.
func base64Size(b []byte) (n int, ok bool) {
	// The padding, and the whitespace around it, off the end.
	end, pad := len(b), 0
	for end > 0 && (b64[b[end-1]] == 2 || b[end-1] == '=') {
		if b[end-1] == '=' {
			pad++
		}
		end--
	}
	// Summed without a branch per byte: the alphabet counts 1, whitespace
	// 0, anything else 1<<32.
	var sum uint64
	rest := b[:end]
	for len(rest) >= 8 {
		sum += b64w[rest[0]] + b64w[rest[1]] + b64w[rest[2]] + b64w[rest[3]] +
			b64w[rest[4]] + b64w[rest[5]] + b64w[rest[6]] + b64w[rest[7]]
		rest = rest[8:]
	}
	for _, c := range rest {
		sum += b64w[c]
	}
	if sum>>32 != 0 {
		return 0, false
	}
	chars := int(sum)
	switch {
	case pad == 0 && chars%4 == 0, pad == 1 && chars%4 == 3, pad == 2 && chars%4 == 2:
		return chars/4*3 + max(0, chars%4-1), true
	}
	return 0, false
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
	// Spaces folded as strings.Fields would, as far as the snippet goes.
	var b strings.Builder
	for f := range strings.FieldsSeq(s) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f)
		if b.Len() > snippetLen {
			break
		}
	}
	s = b.String()
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
