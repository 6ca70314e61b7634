package contentcheck

import (
	"strings"
	"testing"
)

// TestCheck: each check fails on what a sender would want to know about
// and passes otherwise.
func TestCheck(t *testing.T) {
	const mark = "{{unsubscribe_url}}"
	for _, c := range []struct {
		name   string
		in     Content
		failed []string
	}{
		{"clean transactional", Content{HTML: `<p><a href="https://acme.test/a">a</a> <a href="mailto:x@acme.test">m</a><img src="https://acme.test/i.png" alt=""></p>`, Text: "hi"}, nil},
		{"relative, fragment, bad scheme and unparsable links", Content{HTML: `<a href="/path">a</a><a href="#top">b</a><a href="htp://x">c</a><a href="http://[::1">d</a><a href="https://ok.test">e</a>`, Text: "t"}, []string{CheckLinks}},
		{"image without alt", Content{HTML: `<img src="cid:logo"><img src="https://acme.test/x.png" alt="X">`, Text: "t"}, []string{CheckImageAlt}},
		{"no text part", Content{HTML: `<p>hi</p>`}, []string{CheckTextPart}},
		{"html over 102 KB", Content{HTML: "<p>" + strings.Repeat("x", GmailClipBytes) + "</p>", Text: "t"}, []string{CheckHTMLSize}},
		{"marketing without a link", Content{HTML: `<p>Sale!</p>`, Text: "t", Marketing: true}, []string{CheckUnsubscribe}},
		{"marketing with an empty unsubscribe link", Content{HTML: `<a href="https://acme.test/unsubscribe"></a>`, Text: "t", Marketing: true}, []string{CheckUnsubscribe}},
		{"marketing with the topic's mark", Content{HTML: `<a href="` + mark + `">Stop these</a>`, Text: "t", Marketing: true, UnsubscribeURLs: []string{mark}}, nil},
		{"marketing with a link that says so", Content{HTML: `<a href="https://acme.test/p?x=1">Unsubscribe</a>`, Text: "t", Marketing: true}, nil},
	} {
		var failed []string
		for _, f := range Check(c.in) {
			if !f.OK {
				failed = append(failed, f.Check)
			}
			if f.Message == "" {
				t.Errorf("%s: %s has no message", c.name, f.Check)
			}
		}
		if strings.Join(failed, ",") != strings.Join(c.failed, ",") {
			t.Errorf("%s: failed %v, want %v: %+v", c.name, failed, c.failed, Check(c.in))
		}
	}
}
