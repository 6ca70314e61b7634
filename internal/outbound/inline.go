package outbound

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
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
func writeInline(buf *bytes.Buffer, h mail.Header, text, html string) {
	if html == "" {
		// mail.CreateSingleInlineWriter
		cte := transferEncoding(text)
		h.SetContentType("text/plain", map[string]string{"charset": "utf-8"})
		h.Set("Content-Transfer-Encoding", cte)
		_ = textproto.WriteHeader(buf, h.Header.Header)
		writeBody(buf, text, cte)
		return
	}
	// mail.CreateInlineWriter, then message.CreateWriter's multipart case.
	boundary := mimeBoundary()
	h.Set("Content-Type", "multipart/alternative")
	h.SetContentType("multipart/alternative", map[string]string{"boundary": boundary})
	h.Del("Content-Transfer-Encoding")
	_ = textproto.WriteHeader(buf, h.Header.Header)
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
		cte := transferEncoding(p.body)
		buf.WriteString(textPartHeaders[b2i(p.html)][b2i(cte == "quoted-printable")])
		writeBody(buf, p.body, cte)
	}
	buf.WriteString("\r\n--")
	buf.WriteString(boundary)
	buf.WriteString("--\r\n")
}

// writeBody writes body in cte as go-message's encoding writers do: a
// 7bit body (which transferEncoding found free of lines over 998 octets
// and of CRs but in CRLF, so its line wrapper only made each bare LF a
// CRLF) with CRLF line ends, any other quoted-printable.
func writeBody(buf *bytes.Buffer, body, cte string) {
	if cte == "7bit" {
		buf.Grow(len(body) + strings.Count(body, "\n"))
		for {
			i := strings.IndexByte(body, '\n')
			if i < 0 {
				buf.WriteString(body)
				return
			}
			if i > 0 && body[i-1] == '\r' {
				buf.WriteString(body[:i+1])
			} else {
				buf.WriteString(body[:i])
				buf.WriteString("\r\n")
			}
			body = body[i+1:]
		}
	}
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
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
