package outbound

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLToText derives a readable plain-text alternative from an HTML body:
// visible text only, block elements on their own lines, link targets kept
// in angle brackets after the link text so they stay usable.
//
// Most bodies go through scanHTML, one pass over the bytes that splits
// them exactly as x/net/html's tokenizer does (a quarter of its cost,
// which was a tenth of a broadcast's CPU outside the signature); the rare
// markup it does not model (script, plaintext, NUL bytes) goes through
// the tokenizer itself, and a fuzz test holds the two to the same output.
func HTMLToText(src string) string {
	// The text is shorter than its source: one allocation, never written
	// again once made a string (as strings.Builder does).
	text, _ := htmlText(make([]byte, 0, len(src)), src)
	return unsafe.String(unsafe.SliceData(text), len(text))
}

// htmlText writes HTMLToText(src) into scratch (emptied, grown as needed):
// text is the result, within buf, the grown scratch to reuse. A message
// build derives its text part into a reused buffer this way: a new one per
// message was a large share of a broadcast's allocations (profiled).
func htmlText(scratch []byte, src string) (text, buf []byte) {
	var c htmlConverter
	c.t.b = scratch[:0]
	if !scanHTML(&c, src) {
		c = htmlConverter{t: textWriter{b: c.t.b[:0]}}
		tokenizeHTML(&c, src)
	}
	return bytes.TrimSpace(c.t.b), c.t.b
}

// tokenizeHTML is HTMLToText over x/net/html's tokenizer, into c.
func tokenizeHTML(c *htmlConverter, src string) {
	z := html.NewTokenizer(strings.NewReader(src))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return
		case html.TextToken:
			c.text(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			href := ""
			if a == atom.A && tt != html.EndTagToken {
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					if string(k) == "href" {
						href = string(v)
					}
				}
			}
			c.tag(tt, a, href)
		}
	}
}

// htmlConverter turns a token stream into text: the text so far and the
// open elements that matter to it.
type htmlConverter struct {
	t     textWriter
	skip  int      // depth inside script/style/head/title
	hrefs []string // the open links' targets
	link  []byte   // "<href>" as written after a link's text
}

// text takes a text token's (unescaped) bytes.
func (c *htmlConverter) text(s []byte) {
	if c.skip == 0 {
		c.t.text(s, len(c.hrefs) > 0)
	}
}

// tag takes a tag token: tt says which kind, a its element and href the
// href of an A start tag.
func (c *htmlConverter) tag(tt html.TokenType, a atom.Atom, href string) {
	t := &c.t
	start := tt != html.EndTagToken
	switch a {
	case atom.Script, atom.Style, atom.Head, atom.Title:
		if tt == html.StartTagToken {
			c.skip++
		} else if tt == html.EndTagToken && c.skip > 0 {
			c.skip--
		}
	case atom.Br:
		t.newlines(1)
	case atom.P, atom.Div, atom.Table, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
		atom.Ul, atom.Ol, atom.Blockquote, atom.Hr:
		t.newlines(2)
	case atom.Tr:
		t.newlines(1)
	case atom.Li:
		t.newlines(1)
		if start {
			t.word([]byte("-"), len(c.hrefs) > 0)
		}
	case atom.Td, atom.Th:
		t.pendingSpace = true
	case atom.A:
		if start {
			c.hrefs = append(c.hrefs, href)
			t.linkText = t.linkText[:0]
		} else if n := len(c.hrefs); n > 0 {
			href := c.hrefs[n-1]
			c.hrefs = c.hrefs[:n-1]
			if href != "" && !strings.HasPrefix(href, "#") && !strings.HasPrefix(href, "mailto:") &&
				string(bytes.TrimSpace(t.linkText)) != href {
				t.pendingSpace = true
				if cap(c.link) < len(href)+2 {
					c.link = make([]byte, 0, len(href)+2)
				}
				c.link = append(append(append(c.link[:0], '<'), href...), '>')
				t.word(c.link, false)
			}
			// Punctuation right after the link stays attached ("link <href>.",
			// not "link <href> ."); a word still gets its space.
			t.pendingSpace, t.afterLink = false, true
		}
	}
}

// textWriter collapses whitespace the way a browser does and tracks just
// enough state to keep the conversion linear in the input size.
type textWriter struct {
	b            []byte
	trailingNL   int  // newlines at the end of b
	pendingSpace bool // a space separates the next word from the previous
	linkText     []byte
	afterLink    bool // a link just ended: a word (not punctuation) after it needs a space
}

// text writes the words of s (the tokenizer's buffer, read in place);
// inLink keeps them as the open link's text too. Words already separated
// by one ASCII space go out as one run (most text is such runs), so the
// collapsing costs per gap that needs it, not per word.
func (t *textWriter) text(s []byte, inLink bool) {
	if len(s) == 0 {
		return
	}
	if !inLink && plainText(s) {
		// One run, as the loop below would find it, checked in one pass.
		t.word(s, false)
		t.pendingSpace = false
		return
	}
	if isSpace(s[0]) {
		t.pendingSpace = true
	}
	for i := 0; i < len(s); {
		if n := spaceAt(s, i); n > 0 {
			i += n
			continue
		}
		j := i
		for j < len(s) { // to the next space that is not a lone ' ' between words
			if !inLink && j+8 <= len(s) {
				if n := plainRun(binary.LittleEndian.Uint64(s[j:])); n > 0 {
					j += n
					continue
				}
			}
			c := s[j]
			if c >= utf8.RuneSelf {
				r, n := utf8.DecodeRune(s[j:])
				if unicode.IsSpace(r) {
					break
				}
				j += n
				continue
			}
			if asciiSpace[c] {
				// A link's text is kept word by word (it is compared with
				// its target), so runs stop at its spaces.
				if c == ' ' && !inLink && j+1 < len(s) && spaceAt(s, j+1) == 0 {
					j++
					continue
				}
				break
			}
			j++
		}
		t.word(s[i:j], inLink)
		t.pendingSpace = true
		i = j
	}
	if !isSpace(s[len(s)-1]) {
		t.pendingSpace = false
	}
}

// plainRun is how many of the eight bytes in w (little-endian) go on in
// a run from the first: printable ASCII or DEL, a space only before such
// a byte (not before a space, a special byte or the unknown byte after
// the eight). Prose is mostly such words, so text copies runs up to eight
// bytes a step rather than one, and a word's space as the eighth byte no
// longer sends the whole word byte by byte.
func plainRun(w uint64) int {
	const ones, highs, low7 = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	// A byte of 0x80 and over, or under 0x20 (adding 0x60 to its low
	// seven bits leaves its high bit clear; no carry crosses a byte).
	special := w&highs | ^((w&low7)+0x60*ones)&highs
	x := w ^ 0x20*ones // a space is now a zero byte
	spaces := ^((x & low7) + low7 | x) & highs
	return bits.TrailingZeros64(special|spaces&((spaces|special)>>8)|spaces&(0x80<<56)) / 8
}

// plainText reports whether s is one run from end to end: printable
// ASCII or DEL, no space first, last or before another space (most text
// between two tags of prose). It reads eight bytes a step seven apart, the
// checks gathered and tested once at the end.
func plainText(s []byte) bool {
	const ones, highs, low7, spaces, top = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f, 0x2020202020202020, 0xff << 56
	if len(s) < 8 || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	bad := func(w uint64) uint64 {
		// A byte of 0x80 and over or under 0x20, as in plainRun; byte k
		// of pair zero when bytes k and k+1 are spaces.
		special := w | ^((w & low7) + 0x60*ones)
		m := w ^ spaces
		pair := m | m>>8 | top
		return special | (pair-ones)&^pair
	}
	var found uint64
	last := len(s) - 8
	for i := 0; i < last; i += 7 {
		found |= bad(binary.LittleEndian.Uint64(s[i : i+8]))
	}
	found |= bad(binary.LittleEndian.Uint64(s[last:]))
	return found&highs == 0
}

// asciiSpace marks the ASCII bytes unicode.IsSpace reports.
var asciiSpace = [utf8.RuneSelf]bool{' ': true, '\t': true, '\n': true, '\v': true, '\f': true, '\r': true}

func (t *textWriter) word(w []byte, inLink bool) {
	if t.afterLink {
		t.afterLink = false
		r, _ := utf8.DecodeRune(w)
		t.pendingSpace = t.pendingSpace || unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	if t.pendingSpace && len(t.b) > 0 && t.trailingNL == 0 {
		t.b = append(t.b, ' ')
	}
	t.b = append(t.b, w...)
	if inLink { // only a link's own text is compared with its target
		t.linkText = append(t.linkText, w...)
	}
	t.trailingNL = 0
	t.pendingSpace = true
}

func (t *textWriter) newlines(n int) {
	if len(t.b) == 0 {
		return
	}
	for ; t.trailingNL < n; t.trailingNL++ {
		t.b = append(t.b, '\n')
	}
	t.pendingSpace = false
}

// spaceAt is the length of the white space (as strings.Fields sees it:
// Unicode's, so a no-break space too) at s[i], 0 when none.
func spaceAt(s []byte, i int) int {
	if c := s[i]; c < utf8.RuneSelf {
		if asciiSpace[c] {
			return 1
		}
		return 0
	}
	r, n := utf8.DecodeRune(s[i:])
	if unicode.IsSpace(r) {
		return n
	}
	return 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
