package outbound

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlCorpus is varied html, well formed and not: every construct the
// scanner follows the tokenizer through, and those it hands back to it.
var htmlCorpus = []string{
	"", "plain text", "a < b and c > d", "x<", "x</", "x</>y", "x</ y>z", "x<!", "x<!-", "x<!>y", "x<?php echo 1 ?>y",
	"<!DOCTYPE html><html><head><title>T &amp; t</title><style>p{color:red}</style></head><body><p>Hi</p></body></html>",
	"<!doctype html>a", "<!DOCTYP", "<!DOCTYPE", "<!DOCTYPE  ", "<![CDATA[x]]>y",
	"a<!-- c -->b", "a<!---->b", "a<!-->b", "a<!--->b", "a<!-- x --!>b", "a<!-- x --!-->b", "a<!-- x --!", "a<!-- never ends", "<!--[if mso]><p>m</p><![endif]-->v",
	"<p>one</p><p>two</p>", "<div>a<br>b<br/>c</div>", "<ul><li>x</li><li>y</li></ul>", "<ol><li>1<li>2</ol>",
	"<table><tr><td>a</td><td>b</td></tr><tr><th>c</th></tr></table>", "<h1>T</h1><h6>t</h6><blockquote>q</blockquote><hr>e",
	"<a href='https://x.test/a'>link</a>.", "<a href=\"https://x.test/?a=1&amp;b=2\">q</a>", "<a href=https://x.test/u>u</a>!", "<a href=x/>s</a>",
	"<a href='#top'>top</a>", "<a href='mailto:a@b.test'>mail</a>", "<a href='https://x.test'>https://x.test</a>", "<a>no href</a>",
	"<a href='a' href='b'>dup</a>", "<A HREF='U'>up</A>", "<a  href = 'sp' >sp</a>", "<a =x href=y>eq</a>", "<a href='unterminated>x", "<a href=",
	"<a href='x\r\ny'>cr</a>", "<a href='&amp'>e</a>", "<a href='&ampx=1'>e</a>", "<a href=\"&lt;x&gt;\">e</a>", "<a href='a'><a href='b'>nested</a></a>",
	"<br/>x", "<br / >x", "<p a=/>x", "<p a='/'/>x", "<li/>x", "<title/>shown", "<style/>shown too</style>", "<STYLE>x</STYLE>y", "<style>a</stylex>b</style>c",
	"<textarea>a &amp; b</textarea>", "<title>a &amp; b</title>x", "<xmp><b>&amp;</b></xmp>", "<iframe>i</iframe>", "<noscript><p>n</p></noscript>",
	"<style>never ends", "<style>x</", "<style>x</sty", "<style>x</style", "<script>alert(1)</script>after", "<plaintext><p>x",
	"&nbsp;a&nbsp;&nbsp;b &copy; &#169; &#x41; &amp &ampx; &notit; &unknown;", "tab\tnl\ncr\rcrlf\r\nend", "nbsp\u00a0x \u2003y",
	"<p>a</p  ><p\n>b</p\t>", "<p\fclass=x>f</p>", "<b", "<b c", "<b c=", "<b c='", "<b c=d", "<b/", "</b", "</b c", "x\x00y", "<b\x00>",
	"<span>in</span>line<span> spaced </span>words", "<td>a<td>b", "<head>h<p>in head</p></head>after", "<a href='x'>a, </a>b",
	"\xff\xfe<p>\xc3</p>", "<p>caf\u00e9 na\u00efve</p>", "<<p>>", "<p<p>>x", "<1>x</1>", "<a\nhref\n=\n'nl'\n>n</a>", "<a href='x'>link</a>text",
}

// TestScanHTMLMatchesTokenizer holds scanHTML to the tokenizer-based
// converter (as it was before the scanner) over the corpus, each input
// whole and cut at every byte, and the broadcast bench's 15 KB body.
func TestScanHTMLMatchesTokenizer(t *testing.T) {
	inputs := append([]string{benchHTML()}, htmlCorpus...)
	for _, s := range htmlCorpus {
		for i := range len(s) {
			inputs = append(inputs, s[:i])
		}
	}
	for _, s := range inputs {
		checkScan(t, s)
	}
	if !scanHTML(&htmlConverter{}, benchHTML()) {
		t.Fatal("the bench body went to the tokenizer")
	}
}

func checkScan(t *testing.T, s string) {
	t.Helper()
	want := referenceHTMLToText(s)
	if c := (htmlConverter{}); scanHTML(&c, s) {
		if got := string(bytes.TrimSpace(c.t.b)); got != want {
			t.Fatalf("scanHTML(%q)\n got %q\nwant %q", s, got, want)
		}
	}
	if got := HTMLToText(s); got != want {
		t.Fatalf("HTMLToText(%q)\n got %q\nwant %q", s, got, want)
	}
}

// FuzzScanHTML: go test ./internal/outbound -run '^$' -fuzz FuzzScanHTML.
func FuzzScanHTML(f *testing.F) {
	for _, s := range htmlCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkScan(t, s) })
}

// TestHTMLToTextBudget: the bench body converts in a fixed number of
// allocations (the text, the scanner's copy of the input and its reused
// slices, the link's target), none per tag or word, in well under the
// tokenizer's time.
func TestHTMLToTextBudget(t *testing.T) {
	src := benchHTML()
	if n := testing.AllocsPerRun(20, func() { HTMLToText(src) }); n > 8 {
		t.Errorf("HTMLToText of the bench body: %.0f allocations, want at most 8", n)
	}
	// Best of seven each, taken in turn so that both see the same load,
	// and a loose bound: the test shares the machine.
	run := func(f func(string) string) time.Duration {
		start := time.Now()
		for range 100 {
			f(src)
		}
		return time.Since(start) / 100
	}
	fast, slow := time.Duration(1<<62), time.Duration(1<<62)
	for range 7 {
		fast, slow = min(fast, run(HTMLToText)), min(slow, run(referenceHTMLToText))
	}
	if fast*10 > slow*8 {
		t.Errorf("HTMLToText %v per 15 KB body, the tokenizer's %v: want under 80%%", fast, slow)
	}
}

// benchHTML is bench/broadcast's body with the footer delivery adds.
func benchHTML() string {
	return "<html><body><p>Hello Ada, news for Paris (pro plan).</p>" +
		strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n", 180) +
		`<div style="margin-top:24px;font-size:12px;color:#666"><a href="https://mail.example.test/unsubscribe/abc123def">Unsubscribe</a></div>` +
		"</body></html>"
}

func referenceHTMLToText(src string) string {
	t := textWriter{b: make([]byte, 0, len(src))}
	z := html.NewTokenizer(strings.NewReader(src))
	skip := 0 // depth inside script/style/head/title
	var hrefs []string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return string(bytes.TrimSpace(t.b))
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

func BenchmarkHTMLToText(b *testing.B) {
	src := benchHTML()
	b.ReportAllocs()
	for b.Loop() {
		HTMLToText(src)
	}
}
