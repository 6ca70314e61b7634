package tracking

import (
	"bytes"
	"html"
	"net/url"
	"strings"

	xhtml "golang.org/x/net/html"
)

// Paths of the tracking routes (served at the root of the node, and of
// every custom tracking host whose CNAME points at it).
const (
	ClickPath = "/t/c/"
	OpenPath  = "/t/o/"
)

// maxTarget bounds a URL the click route redirects to.
const maxTarget = 8 << 10

// Rewriter rewrites the html of tracked messages.
type Rewriter struct {
	Signer Signer
	// PublicURL is MAILROOM_PUBLIC_URL: links to the node's own pages
	// (unsubscribe, preferences, confirmation, anything under it) are never
	// rewritten.
	PublicURL string
}

// Rewrite returns body with, when flags has TrackClicks, every http(s)
// link of an <a> or <area> tag sent through base+ClickPath (except the
// node's own pages and links already on base) and, when flags has
// TrackOpens, a 1×1 pixel from base+OpenPath added before </body> (or at
// the end). base is the tracking host's origin (scheme and host, no slash).
// Everything else in the markup is kept byte for byte.
func (r Rewriter) Rewrite(body, base string, l Link, flags int) string {
	if body == "" || flags&(TrackOpens|TrackClicks) == 0 {
		return body
	}
	out := body
	if flags&TrackClicks != 0 && r.mayRewrite(body, base) {
		out = r.links(body, base, l)
	}
	if flags&TrackOpens != 0 {
		pixel := `<img src="` + html.EscapeString(base+OpenPath+r.Signer.OpenToken(l)) +
			`" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0">`
		if i := lastIndexFold(out, "</body"); i >= 0 {
			out = out[:i] + pixel + out[i:]
		} else {
			out += pixel
		}
	}
	return out
}

// links rewrites the link tags, copying every other token's bytes as they
// were.
func (r Rewriter) links(body, base string, l Link) string {
	z := xhtml.NewTokenizer(strings.NewReader(body))
	var b bytes.Buffer
	b.Grow(len(body) + len(body)/4)
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			// io.EOF, or input the tokenizer gave up on: keep the rest.
			b.Write(z.Raw())
			return b.String()
		}
		raw := z.Raw()
		if tt != xhtml.StartTagToken && tt != xhtml.SelfClosingTagToken {
			b.Write(raw)
			continue
		}
		name, hasAttr := z.TagName()
		if !hasAttr || (string(name) != "a" && string(name) != "area") {
			b.Write(raw)
			continue
		}
		raw = append([]byte(nil), raw...) // TagAttr reuses the buffer
		var attrs []xhtml.Attribute
		changed := false
		for {
			k, v, more := z.TagAttr()
			a := xhtml.Attribute{Key: string(k), Val: string(v)}
			if a.Key == "href" && !changed && r.trackable(a.Val, base) {
				l.URL = strings.TrimSpace(a.Val)
				a.Val = base + ClickPath + r.Signer.ClickToken(l)
				changed = true
			}
			attrs = append(attrs, a)
			if !more {
				break
			}
		}
		if !changed {
			b.Write(raw)
			continue
		}
		b.WriteByte('<')
		b.Write(name)
		for _, a := range attrs {
			b.WriteByte(' ')
			b.WriteString(a.Key)
			b.WriteString(`="`)
			b.WriteString(html.EscapeString(a.Val))
			b.WriteByte('"')
		}
		if tt == xhtml.SelfClosingTagToken {
			b.WriteString(" /")
		}
		b.WriteByte('>')
	}
}

// mayRewrite says whether links could change body: whether some "href"
// in it, read as the tokenizer reads an attribute's value after its key,
// has a value trackable, or one it cannot tell (a character reference,
// which the tokenizer unescapes, or a NUL). When it says no, links would
// copy every token's bytes unchanged, and the tokenizer's pass over the
// whole body is skipped: a broadcast whose only links are its footer's
// (the node's own pages, never rewritten) paid it for every recipient.
func (r Rewriter) mayRewrite(body, base string) bool {
	for from := 0; ; {
		i := indexFold(body[from:], "href", false)
		if i < 0 {
			return false
		}
		from += i + len("href")
		v, sure := attrValueAt(body, from)
		if !sure || r.trackable(v, base) {
			return true
		}
	}
}

// attrValueAt is the value of the attribute whose key ends at body[i:], as
// x/net/html's tokenizer reads it (readTagAttrVal): white space, "=",
// white space, then a quoted value to its closing quote (or the end), or
// an unquoted one to white space or ">"; "" when no "=" follows. sure is
// false when the tokenizer would change the value (a character reference
// or a NUL in it).
func attrValueAt(body string, i int) (v string, sure bool) {
	i = skipHTMLSpace(body, i)
	if i >= len(body) || body[i] != '=' {
		return "", true
	}
	i = skipHTMLSpace(body, i+1)
	if i >= len(body) {
		return "", true
	}
	switch q := body[i]; q {
	case '>':
		return "", true
	case '\'', '"':
		end := strings.IndexByte(body[i+1:], q)
		if end < 0 {
			v = body[i+1:]
		} else {
			v = body[i+1 : i+1+end]
		}
	default:
		end := strings.IndexAny(body[i:], " \n\r\t\f>")
		if end < 0 {
			v = body[i:]
		} else {
			v = body[i : i+end]
		}
	}
	return v, strings.IndexByte(v, '&') < 0 && strings.IndexByte(v, 0) < 0
}

func skipHTMLSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\n', '\r', '\t', '\f':
			i++
		default:
			return i
		}
	}
	return i
}

// trackable says whether a link goes through the click route: an absolute
// http(s) URL, not one of the node's own pages (unsubscribe, preferences,
// confirmation: anything under MAILROOM_PUBLIC_URL), not already on the
// tracking host, not a template placeholder left unrendered.
func (r Rewriter) trackable(href, base string) bool {
	href = strings.TrimSpace(href)
	if !safeTarget(href) || strings.Contains(href, "{{") {
		return false
	}
	if under(href, r.PublicURL) || under(href, base) {
		return false
	}
	return true
}

// under reports whether u is prefix itself or a URL below it (same
// scheme and host, case-insensitive).
func under(u, prefix string) bool {
	if prefix == "" || len(u) < len(prefix) || !strings.EqualFold(u[:len(prefix)], prefix) {
		return false
	}
	if len(u) == len(prefix) {
		return true
	}
	switch u[len(prefix)] {
	case '/', '?', '#':
		return true
	}
	return strings.HasSuffix(prefix, "/")
}

// safeTarget: an absolute http or https URL with a host, no control
// characters, of sane length: the only URLs a click may redirect to.
func safeTarget(s string) bool {
	if s == "" || len(s) > maxTarget {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")
}

func lastIndexFold(s, sub string) int { return indexFold(s, sub, true) }

// indexFold is the first (or last) index of sub in s, ASCII letters
// matched in either case; sub is ASCII (as "href" and "</body"), where
// this is what strings.EqualFold at each index finds. Candidates are found
// by their first byte with IndexByte (both cases of a letter): testing
// EqualFold at every index of a 15 KB body was a tenth of a tracked
// broadcast recipient's CPU.
func indexFold(s, sub string, last bool) int {
	if len(sub) == 0 || len(sub) > len(s) {
		if len(sub) == 0 {
			if last {
				return len(s)
			}
			return 0
		}
		return -1
	}
	lo, up := asciiLower(sub[0]), asciiUpper(sub[0])
	n := len(s) - len(sub) // the last index sub may start at
	if last {
		for end := n + 1; end > 0; {
			i := strings.LastIndexByte(s[:end], lo)
			if up != lo {
				i = max(i, strings.LastIndexByte(s[:end], up))
			}
			if i < 0 {
				return -1
			}
			if strings.EqualFold(s[i:i+len(sub)], sub) {
				return i
			}
			end = i
		}
		return -1
	}
	nextLo, nextUp := -2, -2 // -2: not looked for yet; -1: none left
	for from := 0; from <= n; {
		if nextLo != -1 && nextLo < from {
			nextLo = indexByteFrom(s[:n+1], lo, from)
		}
		if up != lo && nextUp != -1 && nextUp < from {
			nextUp = indexByteFrom(s[:n+1], up, from)
		}
		i := nextLo
		if up != lo && (i < 0 || (nextUp >= 0 && nextUp < i)) {
			i = nextUp
		}
		if i < 0 {
			return -1
		}
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
		from = i + 1
	}
	return -1
}

// indexByteFrom is the index of c in s at or after from, or -1.
func indexByteFrom(s string, c byte, from int) int {
	if from >= len(s) {
		return -1
	}
	if i := strings.IndexByte(s[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func asciiUpper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
