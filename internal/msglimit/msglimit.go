// Package msglimit checks a raw message against the limits every parser
// of received mail relies on (issue #38): the size of each header block
// (RFC 5322 section 2.2), the nesting of multiparts (RFC 2046 section
// 5.1) and the number of parts. Check reads the message once, line by
// line, in time linear in its size, so the SMTP servers can refuse a
// hostile message before DKIM verification or a MIME parser spends
// anything on it; the parsers keep caps of their own as well.
package msglimit

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
)

// The limits. MaxHeaderBytes is Exchange Online's header limit, above
// Postfix's 100 KB per field (header_size_limit); MaxDepth is half
// Postfix's mime_nesting_limit, far past real mail (a forward of a
// forward is 4); MaxParts is what the inbound parser looks at.
const (
	MaxHeaderBytes = 256 << 10 // one header block, the message's or a part's
	MaxDepth       = 50        // multiparts nested in one another
	MaxParts       = 1000      // MIME parts in all (the message itself not counted)
)

// Error is a limit a message passed, with the SMTP reply (RFC 5321
// code, RFC 3463 enhanced status) a server answers it with.
type Error struct {
	Code     int
	Enhanced [3]int
	Text     string
}

func (e *Error) Error() string { return e.Text }

// The errors Check returns.
var (
	ErrHeaderTooLarge = &Error{552, [3]int{5, 3, 4}, fmt.Sprintf("message header too large (over %d KB)", MaxHeaderBytes>>10)}
	ErrTooDeep        = &Error{554, [3]int{5, 6, 0}, fmt.Sprintf("message nesting too deep (over %d levels of multipart)", MaxDepth)}
	ErrTooManyParts   = &Error{554, [3]int{5, 6, 0}, fmt.Sprintf("message has too many MIME parts (over %d)", MaxParts)}
)

// multipart is an open multipart: its boundary and its depth.
// skipBodies: Check jumps over a body's lines to the next "--" (off only
// in FuzzCheckSkip, which holds it to reading every line).
var skipBodies = true

type multipart struct {
	boundary string
	depth    int
}

// Check returns nil, or the first limit raw passes (ErrHeaderTooLarge,
// ErrTooDeep, ErrTooManyParts). It follows boundaries as go-message's
// multipart reader does: a line that is an outer multipart's delimiter
// ends the inner ones, and a multipart without a boundary parameter takes
// "--" as its delimiter. It does not look inside message/rfc822 parts,
// which no parser of Mailroom descends into.
func Check(raw []byte) error {
	var (
		open      []multipart
		outermost = map[string]int{} // boundary → index in open of the outermost with it
		inHeader  = true
		header    int    // bytes of the header block being read
		ctype     []byte // its Content-Type value, unfolded
		inCType   bool
		depth     int // of the entity being read
		parts     int // the message's parts, the message itself not counted
	)
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line = raw[:i+1]
		}
		raw = raw[len(line):]
		// A delimiter ends a part wherever it is, in its header too (go-
		// message reads a part's header from the part's bytes alone).
		if len(open) > 0 && bytes.HasPrefix(line, []byte("--")) {
			if i, closing, ok := delimiter(line, outermost); ok {
				// Inner multiparts end with their enclosing part.
				for j := len(open) - 1; j > i; j-- {
					closeMultipart(open, outermost, j)
				}
				open = open[:i+1]
				inHeader = false
				if closing {
					closeMultipart(open, outermost, i)
					open = open[:i]
					continue
				}
				parts++
				if parts > MaxParts {
					return ErrTooManyParts
				}
				depth = open[i].depth + 1
				inHeader, header, ctype, inCType = true, 0, nil, false
				continue
			}
		}
		if !inHeader {
			// A body matters only at a line starting "--", a delimiter of
			// an open multipart: the lines before the next one are skipped
			// (a 100 KB attachment is some 1,300 lines, and no '-').
			if len(open) == 0 {
				return nil
			}
			if skipBodies {
				raw = nextDashes(raw)
			}
			continue
		}
		header += len(line)
		if header > MaxHeaderBytes {
			return ErrHeaderTooLarge
		}
		text := bytes.TrimRight(line, "\r\n")
		switch {
		case len(text) == 0:
			inHeader = false
			if b, ok := boundaryOf(ctype); ok {
				if depth+1 > MaxDepth {
					return ErrTooDeep
				}
				if _, ok := outermost[b]; !ok {
					outermost[b] = len(open)
				}
				open = append(open, multipart{b, depth})
			}
		case text[0] == ' ' || text[0] == '\t':
			if inCType {
				ctype = append(ctype, text...)
			}
		default:
			// The first Content-Type counts, as go-message's Get reads it.
			name, value, _ := bytes.Cut(text, []byte(":"))
			inCType = ctype == nil && bytes.EqualFold(bytes.TrimSpace(name), []byte("content-type"))
			if inCType {
				ctype = append([]byte{}, value...)
			}
		}
	}
	return nil
}

// boundaryOf is the boundary of a multipart Content-Type value, read as
// go-message reads it: a value mime cannot parse is taken whole as the
// type, without parameters (so a boundary of ""), and parameters are
// RFC 2047-decoded.
// nextDashes is b from the start of its first line that starts "--", or
// empty when there is none: it looks at each '-', not at each line.
func nextDashes(b []byte) []byte {
	for at := 0; ; {
		i := bytes.IndexByte(b[at:], '-')
		if i < 0 {
			return nil
		}
		i += at
		if (i == 0 || b[i-1] == '\n') && i+1 < len(b) && b[i+1] == '-' {
			return b[i:]
		}
		at = i + 1
	}
}

func boundaryOf(ctype []byte) (string, bool) {
	if ctype == nil {
		return "", false
	}
	v := strings.TrimSpace(string(ctype))
	typ, params, err := mime.ParseMediaType(v)
	if err != nil {
		typ, params = v, nil
	}
	if !strings.HasPrefix(typ, "multipart/") {
		return "", false
	}
	b := params["boundary"]
	if d, err := new(mime.WordDecoder).DecodeHeader(b); err == nil {
		b = d
	}
	return b, true
}

// delimiter reports whether line ("--" + boundary, "--" after it for the
// close delimiter, then optional white space) delimits an open multipart,
// and which.
func delimiter(line []byte, outermost map[string]int) (index int, closing, ok bool) {
	rest := bytes.TrimRight(line[2:], " \t\r\n")
	if i, ok := outermost[string(rest)]; ok {
		return i, false, true
	}
	if b, ok := bytes.CutSuffix(rest, []byte("--")); ok {
		if i, ok := outermost[string(b)]; ok {
			return i, true, true
		}
	}
	return 0, false, false
}

// closeMultipart forgets open[i]'s boundary unless an outer multipart
// holds it too.
func closeMultipart(open []multipart, outermost map[string]int, i int) {
	if outermost[open[i].boundary] == i {
		delete(outermost, open[i].boundary)
	}
}
