package tracking

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/secretbox"
)

func signer(t testing.TB) Signer {
	b, err := secretbox.New("test-secret-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	return Signer{Box: b}
}

var issued = time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)

func TestTokensRoundTripAndRefuseTampering(t *testing.T) {
	s := signer(t)
	l := Link{WorkspaceID: "ws_1", EmailID: "em_1", Issued: issued, URL: "https://shop.example/a?b=c"}
	got, ok := s.Open(KindClick, s.ClickToken(l))
	if !ok || got != l {
		t.Fatalf("click round trip: %+v %v", got, ok)
	}
	o, ok := s.Open(KindOpen, s.OpenToken(l))
	if !ok || o.URL != "" || o.EmailID != "em_1" || !o.Issued.Equal(issued) {
		t.Fatalf("open round trip: %+v %v", o, ok)
	}
	if _, ok := s.Open(KindClick, s.OpenToken(l)); ok {
		t.Error("an open token opened as a click")
	}
	other, _ := secretbox.New("another-secret-key-0123456789")
	if _, ok := s.Open(KindClick, Signer{Box: other}.ClickToken(l)); ok {
		t.Error("a token of another secret opened")
	}
	tok := s.ClickToken(l)
	for _, bad := range []string{"", ".", tok[:len(tok)-1], tok[1:], strings.Replace(tok, ".", "", 1), tok + "A"} {
		if _, ok := s.Open(KindClick, bad); ok {
			t.Errorf("%q opened", bad)
		}
	}
	// A signed payload whose URL is not a safe target never redirects.
	evil := s.Box.Token(purposeClick, nil, Link{WorkspaceID: "w", EmailID: "e", Issued: issued, URL: "javascript:alert(1)"}.encode())
	if _, ok := s.Open(KindClick, evil); ok {
		t.Error("a javascript: target opened")
	}
}

func TestRewrite(t *testing.T) {
	r := Rewriter{Signer: signer(t), PublicURL: "https://mail.example.org"}
	base := "https://links.acme.example"
	l := Link{WorkspaceID: "ws", EmailID: "em", Issued: issued}
	in := `<HTML><body><a class="x" HREF='https://shop.example/p?a=1&amp;b=2'>x</a>` +
		`<a href="https://mail.example.org/unsubscribe/tok">u</a><a href="https://MAIL.example.org/preferences?t=1">p</a>` +
		`<a href="https://links.acme.example/t/c/zzz">already</a><a href="mailto:a@b">m</a><a href="#top">t</a>` +
		`<a href="{{ url }}">tpl</a><a href="https://mail.example.org.evil.example/">lookalike</a><img src="https://img.example/x.png"></BODY></HTML>`
	out := r.Rewrite(in, base, l, TrackOpens|TrackClicks)
	for _, keep := range []string{`https://mail.example.org/unsubscribe/tok`, `https://MAIL.example.org/preferences?t=1`,
		`https://links.acme.example/t/c/zzz`, `mailto:a@b`, `href="#top"`, `{{ url }}`, `<img src="https://img.example/x.png">`} {
		if !strings.Contains(out, keep) {
			t.Errorf("lost %s:\n%s", keep, out)
		}
	}
	if strings.Contains(out, "shop.example") || strings.Contains(out, `"https://mail.example.org.evil.example/"`) {
		t.Errorf("tracked links left as they were:\n%s", out)
	}
	if n := strings.Count(out, base+ClickPath); n != 3 { // shop, lookalike, plus the already-tracked one
		t.Errorf("%d links on the click path, want 3:\n%s", n, out)
	}
	if i, j := strings.Index(out, base+OpenPath), strings.Index(out, "</BODY>"); i < 0 || i > j {
		t.Errorf("pixel not before </body>:\n%s", out)
	}
	// The first link's token carries the unescaped URL.
	start := strings.Index(out, base+ClickPath) + len(base+ClickPath)
	tok := out[start : start+strings.IndexByte(out[start:], '"')]
	got, ok := r.Signer.Open(KindClick, tok)
	if !ok || got.URL != "https://shop.example/p?a=1&b=2" {
		t.Fatalf("token: %+v %v", got, ok)
	}
	if got := r.Rewrite(in, base, l, 0); got != in {
		t.Error("flags 0 changed the html")
	}
	if got := r.Rewrite("<p>hi</p>", base, l, TrackOpens); !strings.HasPrefix(got, "<p>hi</p><img src=") {
		t.Errorf("pixel without </body>: %s", got)
	}
}

func TestMachine(t *testing.T) {
	c := clock.NewFake(issued.Add(time.Hour))
	s := New(Config{Clock: c, Signer: signer(t)})
	browser := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
	for _, tc := range []struct {
		v       Visit
		issued  time.Time
		machine bool
	}{
		{Visit{"GET", browser, false}, issued, false},
		{Visit{"GET", "Mozilla/5.0", false}, issued, true}, // Apple MPP
		{Visit{"GET", "", false}, issued, true},
		{Visit{"HEAD", browser, false}, issued, true},
		{Visit{"GET", "Mozilla/5.0 (compatible; bingbot/2.0)", false}, issued, true},
		{Visit{"GET", "Barracuda Sentinel (EE)", false}, issued, true},
		{Visit{"GET", browser, false}, c.Now().Add(-2 * time.Second), true}, // within seconds of hand-over
		{Visit{"GET", "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)", false}, issued, false},
		// A person's click (Sec-Fetch-User: ?1) counts, however soon and in whatever browser.
		{Visit{"GET", browser, true}, c.Now().Add(-2 * time.Second), false},
		{Visit{"GET", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36", true}, issued, false},
		{Visit{"GET", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36", false}, issued, true},
		{Visit{"HEAD", browser, true}, issued, true},
	} {
		if got := s.Machine(tc.v, tc.issued); got != tc.machine {
			t.Errorf("%+v issued %v: machine %v, want %v", tc.v, tc.issued, got, tc.machine)
		}
	}
}

// FuzzOpenToken: no input panics, and whatever opens is a signed link to
// a safe http(s) target.
func FuzzOpenToken(f *testing.F) {
	s := signer(f)
	f.Add(s.ClickToken(Link{WorkspaceID: "w", EmailID: "e", Issued: issued, URL: "https://a.example/"}))
	f.Add(s.OpenToken(Link{WorkspaceID: "w", EmailID: "e", Issued: issued}))
	f.Add("AAAA.BBBB")
	f.Fuzz(func(t *testing.T, tok string) {
		if l, ok := s.Open(KindClick, tok); ok {
			if u, err := url.Parse(l.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				t.Fatalf("opened an unsafe target %q", l.URL)
			}
		}
		s.Open(KindOpen, tok)
		decodeLink([]byte(tok))
	})
}

// FuzzRewrite: any html rewrites without panicking, and with no trackable
// link nor body the output is the input plus the pixel.
func FuzzRewrite(f *testing.F) {
	r := Rewriter{Signer: signer(f), PublicURL: "https://mail.example.org"}
	f.Add(`<a href="https://x.example/">x</a>`)
	f.Add(`<a href=https://x.example/ href="https://y.example">`)
	f.Add(`<p>no links</p>`)
	f.Add(`<a href="https://x.example/"`)
	f.Fuzz(func(t *testing.T, in string) {
		out := r.Rewrite(in, "https://t.example", Link{WorkspaceID: "w", EmailID: "e", Issued: issued}, TrackClicks|TrackOpens)
		if !strings.Contains(out, "https://t.example"+OpenPath) {
			t.Fatal("no pixel")
		}
		if !strings.Contains(strings.ToLower(in), "href") && !strings.Contains(out, in[:len(in)/2]) {
			t.Fatal("lost the input")
		}
	})
}

// FuzzIndexFold: the case-insensitive search finds what strings.EqualFold
// at every index finds, first and last, for the ASCII needles Rewrite uses
// and any other.
func FuzzIndexFold(f *testing.F) {
	f.Add("<p>x</p></BODY></html>", "</body")
	f.Add("a HREF=x href", "href")
	f.Add("\u212a\u017f</bod", "</body")
	f.Add("hhhhhHhHREF", "href")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, s, sub string) {
		for _, n := range []string{"href", "</body", sub} {
			if n == "" || strings.IndexFunc(n, func(r rune) bool { return r >= 0x80 }) >= 0 {
				continue
			}
			first, last := -1, -1
			for i := 0; i+len(n) <= len(s); i++ {
				if strings.EqualFold(s[i:i+len(n)], n) {
					if first < 0 {
						first = i
					}
					last = i
				}
			}
			if got := indexFold(s, n, false); got != first {
				t.Fatalf("indexFold(%q, %q) = %d, want %d", s, n, got, first)
			}
			if got := lastIndexFold(s, n); got != last {
				t.Fatalf("lastIndexFold(%q, %q) = %d, want %d", s, n, got, last)
			}
		}
	})
}

// FuzzRewriteSkip: when mayRewrite says a body's links cannot change, the
// tokenizer's pass (links) indeed copies it unchanged, so skipping it
// changes no output.
func FuzzRewriteSkip(f *testing.F) {
	r := Rewriter{Signer: signer(f), PublicURL: "https://mail.example.org"}
	for _, s := range []string{
		`<p>x</p><a href="https://mail.example.org/u/tok">Unsubscribe</a></body>`,
		`<a HREF=https://x.example/>x</a>`, `<a href = 'https://x.example/'>`, `<a href="https&#58;//x.example/">`,
		`<!-- <a href="https://x.example/"> -->`, `<script>var a = "<a href='https://x.example/'>"</script>`,
		`<a title="x>y" href="https://x.example/">`, `<a href="{{ url }}">`, "<a href=\"https://x.example/\x00\">",
		`<a href="https://t.example/t/c/abc">`, `<area href=http://x.example/q?a=1>`, `<a hrefx="https://x.example/">`,
		`<a href`, `<a href=`, `<a href="`, `href="https://x.example/"`, `<a xhref="mailto:a@b">`,
	} {
		f.Add(s)
	}
	l := Link{WorkspaceID: "w", EmailID: "e", Issued: issued}
	f.Fuzz(func(t *testing.T, body string) {
		if r.mayRewrite(body, "https://t.example") {
			return
		}
		if got := r.links(body, "https://t.example", l); got != body {
			t.Fatalf("mayRewrite said no, links changed %q to %q", body, got)
		}
	})
}

// TestRewriteKeepsTheNodesOwnLinks: a body whose only links are the node's
// own pages (a broadcast's footer) gets the pixel and nothing else, with or
// without click tracking; a trackable link beside them is rewritten.
func TestRewriteKeepsTheNodesOwnLinks(t *testing.T) {
	r := Rewriter{Signer: signer(t), PublicURL: "https://mail.example.org"}
	l := Link{WorkspaceID: "w", EmailID: "e", Issued: issued}
	body := `<html><body><p>News</p><div class="f"><a href="https://mail.example.org/u/abc">Unsubscribe</a> | <A HREF='https://mail.example.org/p/abc'>Email preferences</A></div></body></html>`
	if r.mayRewrite(body, "https://t.example") {
		t.Fatal("the node's own links counted as trackable")
	}
	opens := r.Rewrite(body, "https://t.example", l, TrackOpens)
	if both := r.Rewrite(body, "https://t.example", l, TrackOpens|TrackClicks); both != opens {
		t.Fatalf("click tracking changed a body with no trackable link:\n%s\n%s", both, opens)
	}
	withShop := strings.Replace(body, "<p>News</p>", `<p><a href="https://shop.example/x">News</a></p>`, 1)
	out := r.Rewrite(withShop, "https://t.example", l, TrackClicks)
	if !strings.Contains(out, "https://t.example"+ClickPath) || !strings.Contains(out, `href="https://mail.example.org/u/abc"`) {
		t.Fatalf("rewritten:\n%s", out)
	}
}
