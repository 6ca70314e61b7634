package outbound

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLToText derives a readable plain-text alternative from an HTML body:
// visible text only, block elements on their own lines, link targets kept
// in angle brackets after the link text so they stay usable.
func HTMLToText(src string) string {
	t := textWriter{}
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
				t.text(string(z.Text()))
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
					t.word("-")
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
						t.word("<" + href + ">")
					}
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
}

func (t *textWriter) text(s string) {
	if s == "" {
		return
	}
	if isSpace(s[0]) {
		t.pendingSpace = true
	}
	for _, f := range strings.Fields(s) {
		t.word(f)
		t.pendingSpace = true
	}
	if !isSpace(s[len(s)-1]) {
		t.pendingSpace = false
	}
}

func (t *textWriter) word(w string) {
	if t.pendingSpace && t.b.Len() > 0 && t.trailingNL == 0 {
		t.b.WriteByte(' ')
	}
	t.b.WriteString(w)
	t.linkText = append(t.linkText, w...)
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

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
