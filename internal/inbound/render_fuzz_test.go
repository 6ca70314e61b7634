package inbound

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRender: any body renders without error or panic to valid UTF-8 html
// with no script, no event handler and no javascript: link.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"", "plain text\nsecond line", "# Title\n\n**bold** _it_ [link](https://example.com)\n\n- a\n- b",
		"<script>alert(1)</script>", "[x](javascript:alert(1))", "<img src=x onerror=alert(1)>",
		"| a | b |\n|---|---|\n| 1 | 2 |", "```\ncode <b>\n```", "> quote\n>> nested", "\x00\xff\xfe",
		strings.Repeat("[", 1000), strings.Repeat("> ", 500) + "deep", strings.Repeat("*a", 2000), "<a href=\"data:text/html,x\">d</a>",
		"~~strike~~ www.example.com", "line\r\nline\rline",
	} {
		f.Add(s)
	}
	r := newBodyRenderer()
	f.Fuzz(func(t *testing.T, body string) {
		html, text, err := r.Render(body)
		if err != nil {
			t.Fatalf("render %q: %v", body, err)
		}
		if !utf8.ValidString(html) || !utf8.ValidString(text) || strings.Contains(text, "\r") {
			t.Fatalf("render %q: invalid output", body)
		}
		low := strings.ToLower(html)
		for _, bad := range []string{"<script", "onerror=", "onload=", "javascript:", "<iframe", "<style"} {
			if strings.Contains(low, bad) {
				t.Fatalf("render %q: %q in %q", body, bad, html)
			}
		}
	})
}

func TestRender(t *testing.T) {
	html, text, err := newBodyRenderer().Render("Hi **Ann**,\r\nthanks.\n\n<script>x</script>\n\n[l](https://example.com)")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<strong>Ann</strong>", "<br", `href="https://example.com"`} {
		if !strings.Contains(html, want) {
			t.Errorf("html %q lacks %q", html, want)
		}
	}
	if strings.Contains(html, "script") || text != "Hi **Ann**,\nthanks.\n\n<script>x</script>\n\n[l](https://example.com)" {
		t.Errorf("html %q text %q", html, text)
	}
}
