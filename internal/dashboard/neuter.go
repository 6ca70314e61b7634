package dashboard

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// neutered are the elements a message's rendered copy drops. The frame's
// CSP blocks their requests, but Chromium still opens a connection for a
// frame, a plugin or a link hint (preconnect, dns-prefetch, prefetch,
// preload): the sender would learn that, and when, the message was read.
// A base would re-point relative URLs; a meta refresh would navigate.
var neutered = map[atom.Atom]bool{
	atom.Iframe: true, atom.Frame: true, atom.Frameset: true, atom.Object: true, atom.Embed: true,
	atom.Applet: true, atom.Link: true, atom.Base: true,
}

// neuter returns the message's HTML without the elements in neutered (an
// iframe's or object's content too) and without any meta http-equiv;
// everything else stays byte for byte as the sender wrote it.
func neuter(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var out bytes.Buffer
	skip := atom.Atom(0) // inside this element, drop everything until it ends
	depth := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out.String() // io.EOF, or a malformed tail: the tokenizer reads to the end either way
		}
		raw := bytes.Clone(z.Raw()) // TagName and TagAttr rewrite the buffer in place
		name, hasAttr := z.TagName()
		a := atom.Lookup(name)
		if skip != 0 {
			switch {
			case tt == html.StartTagToken && a == skip:
				depth++
			case tt == html.EndTagToken && a == skip:
				if depth--; depth == 0 {
					skip = 0
				}
			}
			continue
		}
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			if neutered[a] {
				if tt == html.StartTagToken && (a == atom.Iframe || a == atom.Object || a == atom.Applet || a == atom.Frameset) {
					skip, depth = a, 1
				}
				continue
			}
			if a == atom.Meta && tt != html.EndTagToken && hasAttr && hasHTTPEquiv(z) {
				continue
			}
		}
		out.Write(raw)
	}
}

// hasHTTPEquiv reads the tag's attributes for http-equiv (refresh, a CSP
// of the sender's, a cookie: none belongs in the reader's copy).
func hasHTTPEquiv(z *html.Tokenizer) bool {
	for {
		k, _, more := z.TagAttr()
		if strings.EqualFold(string(k), "http-equiv") {
			return true
		}
		if !more {
			return false
		}
	}
}
