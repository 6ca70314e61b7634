package outbound

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLToText derives a readable plain-text alternative from an HTML body:
// visible text only, block elements on their own lines, link targets kept
// in angle brackets after the link text so they stay usable.
func HTMLToText(src string) string {
	t := textWriter{}
	t.b.Grow(len(src)) // the text is shorter than its source: one allocation
	z := html.NewTokenizer(strings.NewReader(src))
	skip := 0 // depth inside script/style/head/title
	var hrefs []string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return strings.TrimSpace(t.b.String())
		case html.TextToken:
			if skip == 0 {
				t.text(z.Text(), len(hrefs) > 0)
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			start := tt != html.EndTagToken
			switch a {
			case atom.Script, atom.Style, atom.Head, atom.Title:
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
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
					t.word([]byte("-"), len(hrefs) > 0)
				}
			case atom.Td, atom.Th:
				t.pendingSpace = true
			case atom.A:
				if start {
					href := ""
					for hasAttr {
						var k, v []byte
						k, v, hasAttr = z.TagAttr()
						if string(k) == "href" {
							href = string(v)
						}
					}
					hrefs = append(hrefs, href)
					t.linkText = t.linkText[:0]
				} else if n := len(hrefs); n > 0 {
					href := hrefs[n-1]
					hrefs = hrefs[:n-1]
					if href != "" && !strings.HasPrefix(href, "#") && !strings.HasPrefix(href, "mailto:") &&
						strings.TrimSpace(string(t.linkText)) != href {
						t.pendingSpace = true
						t.word([]byte("<"+href+">"), false)
					}
					// Punctuation right after the link stays attached ("link <href>.",
					// not "link <href> ."); a word still gets its space.
					t.pendingSpace, t.afterLink = false, true
				}
			}
		}
	}
}

// textWriter collapses whitespace the way a browser does and tracks just
// enough state to keep the conversion linear in the input size.
type textWriter struct {
	b            strings.Builder
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

// asciiSpace marks the ASCII bytes unicode.IsSpace reports.
var asciiSpace = [utf8.RuneSelf]bool{' ': true, '\t': true, '\n': true, '\v': true, '\f': true, '\r': true}

func (t *textWriter) word(w []byte, inLink bool) {
	if t.afterLink {
		t.afterLink = false
		r, _ := utf8.DecodeRune(w)
		t.pendingSpace = t.pendingSpace || unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	if t.pendingSpace && t.b.Len() > 0 && t.trailingNL == 0 {
		t.b.WriteByte(' ')
	}
	t.b.Write(w)
	if inLink { // only a link's own text is compared with its target
		t.linkText = append(t.linkText, w...)
	}
	t.trailingNL = 0
	t.pendingSpace = true
}

func (t *textWriter) newlines(n int) {
	if t.b.Len() == 0 {
		return
	}
	for ; t.trailingNL < n; t.trailingNL++ {
		t.b.WriteByte('\n')
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
