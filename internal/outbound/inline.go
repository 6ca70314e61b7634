package outbound

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"mime"
	"mime/quotedprintable"
	"strings"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"
)

// writeInline writes the message of most sends, text alone or text and
// HTML as multipart/alternative, straight into buf: the bytes go-message's
// writers produce (the same header calls, then the boundaries and bodies
// as its multipart and encoding writers write them; a test holds the two
// to the same output), without their layers, which copied 7bit bodies
// through a line wrapper byte by byte (a twentieth of a broadcast's CPU,
// profiled). Attachments and inline images still go through go-message.
func writeInline(buf *bytes.Buffer, h *fields, text, html string) {
	if html == "" {
		// mail.CreateSingleInlineWriter; SetContentType's value.
		h.Set("Content-Type", "text/plain; charset=utf-8")
		mark := buf.Len()
		h.Set("Content-Transfer-Encoding", "7bit")
		buf.Write(h.appendTo(buf.AvailableBuffer()))
		if !writeSevenBit(buf, text) {
			buf.Truncate(mark)
			h.Set("Content-Transfer-Encoding", "quoted-printable")
			buf.Write(h.appendTo(buf.AvailableBuffer()))
			writeQuotedPrintable(buf, text)
		}
		return
	}
	// mail.CreateInlineWriter, then message.CreateWriter's multipart case
	// (its two Sets of Content-Type leave the one field, on top).
	boundary := mimeBoundary()
	h.Set("Content-Type", contentTypeWithBoundary("multipart/alternative", boundary))
	h.Del("Content-Transfer-Encoding")
	buf.Write(h.appendTo(buf.AvailableBuffer()))
	// Least preferred first (RFC 2046 section 5.1.4).
	for i, p := range [2]struct {
		html bool
		body string
	}{{false, text}, {true, html}} {
		if i > 0 {
			buf.WriteString("\r\n")
		}
		buf.WriteString("--")
		buf.WriteString(boundary)
		buf.WriteString("\r\n")
		mark := buf.Len()
		buf.WriteString(textPartHeaders[b2i(p.html)][0])
		if !writeSevenBit(buf, p.body) {
			buf.Truncate(mark)
			buf.WriteString(textPartHeaders[b2i(p.html)][1])
			writeQuotedPrintable(buf, p.body)
		}
	}
	buf.WriteString("\r\n--")
	buf.WriteString(boundary)
	buf.WriteString("--\r\n")
}

// writeSevenBit writes body as go-message's 7bit writer does, with CRLF
// line ends (its line wrapper only made each bare LF a CRLF), when
// transferEncoding would find it 7bit: it checks each line as it copies
// it, rather than reading the body once more before. It reports false,
// having written part of it, for a body that needs quoted-printable.
func writeSevenBit(buf *bytes.Buffer, body string) bool {
	buf.Grow(len(body) + len(body)/32)
	if plainASCII(body) {
		// Without a CR, each line is its content: only its length is left
		// to check (sevenBit per line was a third of the build's CPU). The
		// lines are appended to the buffer's free space, then taken in
		// one Write, not two WriteString calls a line.
		out := buf.AvailableBuffer()
		for len(body) > 0 {
			i := strings.IndexByte(body, '\n')
			if i < 0 {
				if len(body) > 998 {
					return false
				}
				out = append(out, body...)
				break
			}
			if i > 998 {
				return false
			}
			out = append(append(out, body[:i]...), '\r', '\n')
			body = body[i+1:]
		}
		buf.Write(out)
		return true
	}
	for len(body) > 0 {
		line, rest := body, ""
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			line, rest = body[:i], body[i+1:]
		}
		content := strings.TrimSuffix(line, "\r")
		if rest == "" && len(line) == len(body) {
			content = line // the last line, without a line end: a CR is its own
		}
		if len(content) > 998 || !sevenBit(content) {
			return false
		}
		buf.WriteString(content)
		if len(line) < len(body) { // a line end followed
			buf.WriteString("\r\n")
		}
		body = rest
	}
	return true
}

// writeQuotedPrintable writes body as go-message's quoted-printable
// writer does.
func writeQuotedPrintable(buf *bytes.Buffer, body string) {
	w := quotedprintable.NewWriter(buf)
	_, _ = w.Write([]byte(body))
	_ = w.Close()
}

// textPartHeaders are the header blocks of the parts of a
// multipart/alternative, [html][quoted-printable], as InlineWriter's
// CreatePart writes them: written once rather than per message.
var textPartHeaders = func() (hs [2][2]string) {
	for i, typ := range [2]string{"text/plain", "text/html"} {
		for j, cte := range [2]string{"7bit", "quoted-printable"} {
			var mh mail.InlineHeader
			mh.SetContentType(typ, map[string]string{"charset": "utf-8"})
			mh.Set("Content-Transfer-Encoding", cte)
			mh.Set("Content-Disposition", "inline")
			var b bytes.Buffer
			_ = textproto.WriteHeader(&b, mh.Header.Header)
			hs[i][j] = b.String()
		}
	}
	return hs
}()

// mimeBoundary makes a multipart boundary; tests may fix it.
var mimeBoundary = randomBoundary

// randomBoundary is a boundary as go-message makes one: 30 random bytes
// in hex.
func randomBoundary() string {
	var b [30]byte
	var h [60]byte
	_, _ = rand.Read(b[:])
	hex.Encode(h[:], b[:])
	return string(h[:])
}

// contentTypeWithBoundary is go-message's SetContentType value for typ
// with that boundary parameter: written as is when it is made of letters
// and digits (ours always are), which need neither encoding nor quotes.
func contentTypeWithBoundary(typ, boundary string) string {
	plain := boundary != ""
	for i := 0; i < len(boundary) && plain; i++ {
		c := boundary[i]
		plain = '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	if !plain {
		return mime.FormatMediaType(typ, map[string]string{"boundary": mime.QEncoding.Encode("utf-8", boundary)})
	}
	return typ + "; boundary=" + boundary
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
