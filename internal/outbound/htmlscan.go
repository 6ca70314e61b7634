package outbound

import (
	"bytes"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// scanHTML is HTMLToText in one pass over src, into c: it finds the tokens where
// x/net/html's tokenizer (v0.62, token.go) does, following its functions
// step by step (the names below are its), but jumps to the next '<' with
// IndexByte and reads only what the conversion uses: the tag names, an
// A's href, text. ok is false for what it leaves to the tokenizer: NUL
// bytes, script and plaintext content (their end is found by other
// rules), a lone "</" at the end; c then holds part of the text.
func scanHTML(c *htmlConverter, src string) (ok bool) {
	if strings.IndexByte(src, 0) >= 0 {
		return false
	}
	c.hrefs, c.t.linkText = make([]string, 0, 4), make([]byte, 0, 64)
	c.t.b = slices.Grow(c.t.b, len(src))
	// Read from a reused copy: tag names and keys are lowered in place.
	s := htmlScanner{b: append(scanBufs.Get(), src...), keys: make([][2]int, 0, 8)}
	defer func() { scanBufs.Put(s.b) }()
	b := s.b
	i := 0
	for {
		if s.rawTag != "" { // readRawOrRCDATA
			if s.rawTag == "script" || s.rawTag == "plaintext" {
				return false
			}
			j := rawTextEnd(b, i, s.rawTag)
			if j > i && c.skip == 0 {
				escaped := s.rawTag == "textarea" || s.rawTag == "title"
				c.text(tokenText(b[i:j], escaped))
			}
			i, s.rawTag = j, ""
		}
		j := markupStart(b, i)
		if j > i && c.skip == 0 {
			c.text(tokenText(b[i:j], true))
		}
		if j >= len(b) {
			return true
		}
		// b[j] is '<' and b[j+1] a letter, '/', '!' or '?'.
		switch ch := b[j+1]; {
		case isASCIILetter(ch):
			tag, ok := s.readTag(j+1, true)
			if !ok {
				return true // the tokenizer's ErrorToken
			}
			tt := html.StartTagToken
			// readStartTag: "/>" is self-closing unless the slash ends an
			// unquoted attribute value (<p a=/>).
			if b[tag.end-2] == '/' && (tag.attrs == 0 || tag.end-2 != tag.lastValEnd-1) {
				tt = html.SelfClosingTagToken
			}
			s.rawTag = rawTagOf(tag.name)
			a := atom.Lookup(tag.name)
			href := ""
			if a == atom.A && tag.hrefAt >= 0 {
				href = s.href(j, tag)
			}
			c.tag(tt, a, href)
			i = tag.end
		case ch == '/':
			if j+2 >= len(b) {
				return false // "</" at the end is a text token
			}
			switch c2 := b[j+2]; {
			case c2 == '>': // "</>" is no token
				i = j + 3
			case isASCIILetter(c2):
				tag, ok := s.readTag(j+2, false)
				if !ok {
					return true
				}
				c.tag(html.EndTagToken, atom.Lookup(tag.name), "")
				i = tag.end
			default: // a bogus comment
				i = closeAngle(b, j+2)
			}
		case ch == '!': // readMarkupDeclaration
			if j+3 < len(b) && b[j+2] == '-' && b[j+3] == '-' {
				i = commentEnd(b, j+4)
			} else {
				// A doctype or a bogus comment (CDATA is not allowed
				// outside foreign content): to the next '>'.
				i = closeAngle(b, j+2)
			}
		default: // '?': a bogus comment
			i = closeAngle(b, j+1)
		}
		if i >= len(b) {
			return true
		}
	}
}

// scanBufs are scanHTML's copies of its input.
var scanBufs Buffers

// htmlScanner holds scanHTML's input and the reused state of its tags.
type htmlScanner struct {
	b      []byte
	rawTag string   // the element whose raw text comes next, lower case
	keys   [][2]int // the attribute keys of the current tag (lower case)
}

// scannedTag is where readTag found a tag's parts.
type scannedTag struct {
	name       []byte // lower case
	end        int    // just after the '>'
	attrs      int    // attributes kept (non-empty key, first of its name)
	lastValEnd int    // the end of the last kept attribute's value
	hrefAt     int    // the raw value of the kept "href": b[hrefAt:hrefEnd]; -1 when none
	hrefEnd    int
}

// readTag is the tokenizer's readTag from p, the first byte of the name:
// ok is false when the input ends inside the tag (an ErrorToken).
func (s *htmlScanner) readTag(p int, saveAttr bool) (tag scannedTag, ok bool) {
	b := s.b
	r := p + 1
	tag.hrefAt = -1
	// readTagName
	for {
		if r >= len(b) {
			return tag, false
		}
		c := b[r]
		r++
		if isTagSpace(c) {
			tag.name = lower(b[p : r-1])
			break
		}
		if c == '/' || c == '>' {
			r--
			tag.name = lower(b[p:r])
			break
		}
	}
	s.keys = s.keys[:0]
	if r = skipTagSpace(b, r); r >= len(b) {
		return tag, false
	}
	for {
		if r >= len(b) {
			return tag, false
		}
		if b[r] == '>' {
			tag.end = r + 1
			return tag, true
		}
		// readTagAttrKey
		keyStart := r
		for {
			if r >= len(b) {
				return tag, false
			}
			c := b[r]
			r++
			if c == '=' && keyStart+1 == r {
				continue
			}
			if c == '=' || isTagSpace(c) || c == '/' || c == '>' {
				r--
				break
			}
		}
		keyEnd := r
		// readTagAttrVal
		valStart, valEnd := r, r
		if r = skipTagSpace(b, r); r >= len(b) {
			return tag, false
		}
		c := b[r]
		r++
		if c == '=' {
			if r = skipTagSpace(b, r); r >= len(b) {
				return tag, false
			}
			quote := b[r]
			r++
			switch quote {
			case '>':
				r--
			case '\'', '"':
				valStart = r
				q := bytes.IndexByte(b[r:], quote)
				if q < 0 {
					return tag, false
				}
				valEnd, r = r+q, r+q+1
			default:
				valStart = r - 1
				for {
					if r >= len(b) {
						return tag, false
					}
					c := b[r]
					r++
					if isTagSpace(c) {
						valEnd = r - 1
						break
					}
					if c == '>' {
						r--
						valEnd = r
						break
					}
				}
			}
		} else if c != '/' {
			r--
		}
		if saveAttr && keyStart != keyEnd && s.newKey(keyStart, keyEnd) {
			tag.attrs++
			tag.lastValEnd = valEnd
			if string(b[keyStart:keyEnd]) == "href" {
				tag.hrefAt, tag.hrefEnd = valStart, valEnd
			}
		}
		if r = skipTagSpace(b, r); r >= len(b) {
			return tag, false
		}
	}
}

// newKey lowers the key b[start:end] and reports whether the tag has not
// had it yet (the tokenizer keeps the first of a name only).
func (s *htmlScanner) newKey(start, end int) bool {
	k := lower(s.b[start:end])
	for _, o := range s.keys {
		if string(s.b[o[0]:o[1]]) == string(k) {
			return false
		}
	}
	s.keys = append(s.keys, [2]int{start, end})
	return true
}

// href is the value of tag's href as TagAttr returns it. A value with an
// entity or a CR goes through the tokenizer (on the tag alone, which it
// reads the same way), since attribute values unescape by rules of their
// own that x/net/html does not export.
func (s *htmlScanner) href(start int, tag scannedTag) string {
	v := s.b[tag.hrefAt:tag.hrefEnd]
	if bytes.IndexByte(v, '&') < 0 && bytes.IndexByte(v, '\r') < 0 {
		return string(v)
	}
	z := html.NewTokenizer(bytes.NewReader(s.b[start:tag.end]))
	z.Next()
	for _, more := z.TagName(); more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		if string(k) == "href" {
			return string(v)
		}
	}
	return ""
}

// markupStart is the index of the next '<' from i that starts a tag, an
// end tag, a comment or a doctype (a letter, '/', '!' or '?' after it),
// len(b) when none: the end of a text token.
func markupStart(b []byte, i int) int {
	for {
		k := bytes.IndexByte(b[i:], '<')
		if k < 0 {
			return len(b)
		}
		i += k
		if i+1 < len(b) {
			if c := b[i+1]; isASCIILetter(c) || c == '/' || c == '!' || c == '?' {
				return i
			}
		}
		i++
	}
}

// rawTextEnd is where the raw text of tag (script excepted) from i ends:
// at the "</tag" followed by a space, '/' or '>', else at the end.
func rawTextEnd(b []byte, i int, tag string) int {
	for {
		k := bytes.IndexByte(b[i:], '<')
		if k < 0 {
			return len(b)
		}
		i += k
		j := i + 1
		if j >= len(b) || b[j] != '/' {
			i = j
			continue
		}
		j++
		n := 0
		for ; n < len(tag) && j+n < len(b); n++ {
			if c := b[j+n]; c != tag[n] && c != tag[n]-('a'-'A') {
				break
			}
		}
		if n == len(tag) && j+n < len(b) {
			if c := b[j+n]; isTagSpace(c) || c == '/' || c == '>' {
				return i
			}
		}
		if j+n >= len(b) {
			return len(b)
		}
		i = j // the tokenizer reads on from the mismatched byte
	}
}

// commentEnd is readComment from p, just after "<!--": the index after
// the comment's end, len(b) when it runs to the end.
func commentEnd(b []byte, p int) int {
	dashes, beginning := 0, true
	for r := p; r < len(b); {
		c := b[r]
		r++
		switch c {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return r
			}
		case '!':
			if dashes >= 2 {
				if r >= len(b) {
					return len(b)
				}
				c = b[r]
				r++
				if c == '>' {
					return r
				} else if c == '-' {
					dashes, beginning = 1, false
					continue
				}
			}
		}
		dashes, beginning = 0, false
	}
	return len(b)
}

// closeAngle is readUntilCloseAngle from p: the index after the next '>',
// len(b) when none.
func closeAngle(b []byte, p int) int {
	if k := bytes.IndexByte(b[p:], '>'); k >= 0 {
		return p + k + 1
	}
	return len(b)
}

// tokenText is a text token's bytes as Text returns them: line breaks as
// LF, entities decoded unless the text is raw (NULs are not scanned).
func tokenText(s []byte, escaped bool) []byte {
	if bytes.IndexByte(s, '\r') >= 0 {
		s = bytes.ReplaceAll(s, []byte("\r\n"), []byte("\n"))
		s = bytes.ReplaceAll(s, []byte("\r"), []byte("\n"))
	}
	if escaped && bytes.IndexByte(s, '&') >= 0 {
		s = []byte(html.UnescapeString(string(s)))
	}
	return s
}

// rawTagOf is name when its content is raw text (readStartTag's list).
func rawTagOf(name []byte) string {
	switch string(name) {
	case "iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp":
		return string(name)
	}
	return ""
}

func skipTagSpace(b []byte, r int) int {
	for r < len(b) && isTagSpace(b[r]) {
		r++
	}
	return r
}

func isTagSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// lower lowers ASCII letters in place, as the tokenizer does.
func lower(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}
