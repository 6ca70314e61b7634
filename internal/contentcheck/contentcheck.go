// Package contentcheck reviews an email's content before it goes, the way a
// careful sender would before a campaign: links that are not absolute
// http(s) URLs, images without alt text, a missing text part, html that
// Gmail clips, and marketing mail without a visible unsubscribe link
// (RFC 8058 asks for the header; people look for the link). It reads html
// with golang.org/x/net/html's tokenizer, so a body of any size is read
// once, as a stream.
package contentcheck

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"mailroom/internal/apierr"
)

// GmailClipBytes is where Gmail clips a message's html ("[Message
// clipped]"): 102 KB.
const GmailClipBytes = 102 * 1024

// Checks, in the order Check answers them.
const (
	CheckLinks       = "links"
	CheckImageAlt    = "image_alt"
	CheckTextPart    = "text_part"
	CheckHTMLSize    = "html_size"
	CheckUnsubscribe = "unsubscribe_link"
)

// maxNamed bounds the offenders one finding names.
const maxNamed = 5

// Finding is one check's answer.
type Finding struct {
	Check   string `json:"check"`
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// Content is what is checked.
type Content struct {
	HTML, Text string
	// Marketing is bulk mail (a topic, or List-Unsubscribe among its
	// headers): it must show an unsubscribe link.
	Marketing bool
	// UnsubscribeURLs are hrefs that stand for the recipient's own
	// unsubscribe or preferences link (the marks a topic send carries until
	// delivery): they count as unsubscribe links and as good links.
	UnsubscribeURLs []string
}

// Check answers every check for c, each with ok true or false.
func Check(c Content) []Finding {
	r := scan(c)
	out := make([]Finding, 0, 5)
	if len(r.badLinks) == 0 {
		out = append(out, Finding{CheckLinks, true, fmt.Sprintf("All %d links are absolute http(s) URLs.", r.links)})
	} else {
		out = append(out, Finding{CheckLinks, false, fmt.Sprintf("%d of %d links are not absolute http(s) URLs and will not open from a mail client: %s.",
			r.bad, r.links, strings.Join(r.badLinks, ", "))})
	}
	if r.noAlt == 0 {
		out = append(out, Finding{CheckImageAlt, true, fmt.Sprintf("All %d images have alt text.", r.images)})
	} else {
		out = append(out, Finding{CheckImageAlt, false, fmt.Sprintf("%d of %d images have no alt attribute (shown when images are blocked, read by screen readers): %s. Use alt=\"\" for decoration.",
			r.noAlt, r.images, strings.Join(r.noAltSrc, ", "))})
	}
	switch {
	case strings.TrimSpace(c.Text) != "":
		out = append(out, Finding{CheckTextPart, true, "The message has a text part."})
	case c.HTML == "":
		out = append(out, Finding{CheckTextPart, false, "The message has no body."})
	default:
		out = append(out, Finding{CheckTextPart, false, "No text part was given: one is derived from the html. Give text to control what plain-text readers and spam filters see."})
	}
	if len(c.HTML) > GmailClipBytes {
		out = append(out, Finding{CheckHTMLSize, false, fmt.Sprintf("The html is %d bytes; Gmail clips html over %d (102 KB) behind \"[Message clipped]\", hiding what follows (often the unsubscribe link and the open pixel).", len(c.HTML), GmailClipBytes)})
	} else {
		out = append(out, Finding{CheckHTMLSize, true, fmt.Sprintf("The html is %d bytes, under Gmail's 102 KB clipping.", len(c.HTML))})
	}
	switch {
	case !c.Marketing:
		out = append(out, Finding{CheckUnsubscribe, true, "Transactional mail: no unsubscribe link is needed."})
	case r.unsubscribe:
		out = append(out, Finding{CheckUnsubscribe, true, "The body shows an unsubscribe link."})
	default:
		out = append(out, Finding{CheckUnsubscribe, false, "Marketing mail (a topic or List-Unsubscribe) whose body shows no unsubscribe link: add a visible link ({{ unsubscribe_url }} in a template), or people report it as spam instead."})
	}
	return out
}

// report is what one pass over the html found.
type report struct {
	links, bad    int
	badLinks      []string
	images, noAlt int
	noAltSrc      []string
	unsubscribe   bool
}

// scan reads the html once: every <a href>, every <img>, and whether a
// link with text reads as an unsubscribe link (its href is one of the
// recipient's own, or its href or text says unsubscribe or opt out).
func scan(c Content) report {
	var r report
	z := html.NewTokenizer(strings.NewReader(c.HTML))
	var open *anchor // the <a> being read, for its text
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return r
		case html.TextToken:
			if open != nil {
				open.text.Write(z.Text())
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.A && open != nil {
				if strings.TrimSpace(open.text.String()) != "" && open.unsubscribe(c.UnsubscribeURLs) {
					r.unsubscribe = true
				}
				open = nil
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.A:
				attrs := attributes(z, hasAttr)
				href, ok := attrs["href"]
				if !ok {
					continue
				}
				r.links++
				if !goodLink(href, c.UnsubscribeURLs) {
					r.bad++
					if len(r.badLinks) < maxNamed {
						r.badLinks = append(r.badLinks, fmt.Sprintf("%q", apierr.Clip(href, 77)))
					}
				}
				if tt == html.StartTagToken {
					open = &anchor{href: href}
				}
			case atom.Img:
				attrs := attributes(z, hasAttr)
				r.images++
				if _, ok := attrs["alt"]; !ok {
					r.noAlt++
					if len(r.noAltSrc) < maxNamed {
						r.noAltSrc = append(r.noAltSrc, fmt.Sprintf("%q", apierr.Clip(attrs["src"], 77)))
					}
				}
			}
		}
	}
}

// anchor is an <a> being read.
type anchor struct {
	href string
	text strings.Builder
}

func (a *anchor) unsubscribe(own []string) bool {
	for _, u := range own {
		if a.href == u {
			return true
		}
	}
	for _, s := range []string{strings.ToLower(a.href), strings.ToLower(a.text.String())} {
		if strings.Contains(s, "unsubscribe") || strings.Contains(s, "opt out") || strings.Contains(s, "opt-out") {
			return true
		}
	}
	return false
}

// goodLink accepts an absolute http(s) URL with a host, a mailto: or tel:
// link, and the recipient's own links.
func goodLink(href string, own []string) bool {
	href = strings.TrimSpace(href)
	for _, u := range own {
		if href == u {
			return true
		}
	}
	u, err := url.Parse(href)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "mailto", "tel":
		return u.Opaque != ""
	}
	return false
}

// attributes reads the tag's attributes (names lowercased by the tokenizer).
func attributes(z *html.Tokenizer, more bool) map[string]string {
	out := map[string]string{}
	for more {
		var k, v []byte
		k, v, more = z.TagAttr()
		out[string(k)] = string(v)
	}
	return out
}
