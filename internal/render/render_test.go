package render

import (
	"errors"
	"strings"
	"testing"
)

func mustParse(t *testing.T, subject, html, text string) *Template {
	t.Helper()
	tpl, err := Parse(subject, html, text)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func TestRenderEscapesOnlyHTML(t *testing.T) {
	tpl := mustParse(t, "Hi {{name}}", "<body><p>Hi {{name}}</p></body>", "Hi {{name}}")
	out, err := tpl.Render(map[string]any{"name": `<b>Ann & "Bo"</b>`}, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "<body><p>Hi &lt;b&gt;Ann &amp; &#34;Bo&#34;&lt;/b&gt;</p></body>"; out.HTML != want {
		t.Errorf("html = %q, want %q", out.HTML, want)
	}
	if want := `Hi <b>Ann & "Bo"</b>`; out.Text != want || out.Subject != want {
		t.Errorf("text = %q, subject = %q, want both %q", out.Text, out.Subject, want)
	}
}

func TestRenderSections(t *testing.T) {
	tpl := mustParse(t, "", "", "{{#items}}[{{name}}]{{/items}}{{^items}}none{{/items}}{{#vip}} VIP{{/vip}}")
	out, err := tpl.Render(map[string]any{"items": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "vip": true}, "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "[a][b] VIP" {
		t.Errorf("text = %q", out.Text)
	}
	out, _ = tpl.Render(nil, "")
	if out.Text != "none" {
		t.Errorf("empty render = %q, want none", out.Text)
	}
}

func TestSubjectAndPreheaderLoseLineBreaks(t *testing.T) {
	tpl := mustParse(t, "Hello {{name}}", "<html><BODY class=x><p>x</p></body></html>", "")
	out, err := tpl.Render(map[string]any{"name": "Ann\r\nBcc: evil@example.com"}, "Dear {{name}} <3")
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.Subject, "\r\n") || strings.ContainsAny(out.Preheader, "\r\n") {
		t.Errorf("subject %q or preheader %q keeps a line break", out.Subject, out.Preheader)
	}
	if !strings.HasPrefix(out.HTML, `<html><BODY class=x><div style="display:none`) || !strings.Contains(out.HTML, "Dear Ann  Bcc: evil@example.com &lt;3</div><p>x</p>") {
		t.Errorf("html = %q: want the escaped preheader hidden first in the body", out.HTML)
	}
	if out.Text != "x" {
		t.Errorf("text derived from html = %q, want %q (without the preheader)", out.Text, "x")
	}
}

func TestPartialsRefused(t *testing.T) {
	for _, src := range []string{"{{> /etc/passwd}}", "{{#a}}{{>x}}{{/a}}"} {
		if _, err := Parse("", src, ""); err == nil || !strings.Contains(err.Error(), "partial") {
			t.Errorf("Parse(%q) = %v, want a partial refusal", src, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{"{{#a}}unclosed", "{{name", "{{/a}}", strings.Repeat("x", MaxTemplateBytes+1),
		strings.Repeat("{{#a}}", MaxDepth+1) + strings.Repeat("{{/a}}", MaxDepth+1)} {
		if _, err := Parse("", src, ""); err == nil {
			t.Errorf("Parse(%.30q) succeeded", src)
		}
	}
	if _, err := Parse(strings.Repeat("s", MaxSubjectTemplateBytes+1), "x", ""); err == nil {
		t.Error("an oversized subject parsed")
	}
}

func TestLimits(t *testing.T) {
	list := make([]any, 100)
	for i := range list {
		list[i] = i
	}
	nested := mustParse(t, "", "", "{{#a}}{{#a}}{{#a}}{{#a}}{{/a}}{{/a}}{{/a}}{{/a}}")
	if _, err := nested.Render(map[string]any{"a": list}, ""); !errors.Is(err, ErrTooMuchWork) {
		t.Errorf("100^4 loop: err = %v, want ErrTooMuchWork", err)
	}
	big := mustParse(t, "", "", "{{#a}}"+strings.Repeat("y", 100_000)+"{{/a}}")
	if _, err := big.Render(map[string]any{"a": list}, ""); !errors.Is(err, ErrTooMuchWork) {
		t.Errorf("10 MB output: err = %v, want ErrTooMuchWork", err)
	}
	raw := mustParse(t, "", "{{{v}}}{{{v}}}{{{v}}}", "")
	if _, err := raw.Render(map[string]any{"v": strings.Repeat("z", MaxOutputBytes/2)}, ""); !errors.Is(err, ErrTooMuchWork) {
		t.Errorf("raw output over the cap: err = %v, want ErrTooMuchWork", err)
	}
}

func TestNames(t *testing.T) {
	tpl := mustParse(t, "{{a}}", "{{b.c}} {{#d}}{{e}}{{/d}}", "{{a}} {{^f}}{{/f}}")
	if got := strings.Join(tpl.Names(), ","); got != "a,b,d,f" {
		t.Errorf("Names = %s", got)
	}
}

func TestSubjectShowsLinks(t *testing.T) {
	for _, c := range []struct {
		subject, html string
		want          bool
	}{
		{"Hi {{ first_name }}", `<a href="{{ unsubscribe_url }}">x</a>`, false},
		{"Leave: {{ unsubscribe_url }}", "", true},
		{"{{#vip}}Prefs {{{ preferences_url }}}{{/vip}}", "", true},
		{"{{^vip}}{{ unsubscribe_url | default: \"none\" }}{{/vip}}", "", true},
		{"Bye *|UNSUB|*", "", true},
		{"", "{{ unsubscribe_url }}", false},
	} {
		if got := mustParse(t, c.subject, c.html, "").SubjectShowsLinks(); got != c.want {
			t.Errorf("SubjectShowsLinks(%q) = %v, want %v", c.subject, got, c.want)
		}
	}
}

func TestRenderForSendLeavesTextToDelivery(t *testing.T) {
	tpl := mustParse(t, "S {{a}}", "<p>{{a}}</p>", "")
	out, err := tpl.RenderForSend(map[string]any{"a": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Subject != "S x" || out.HTML != "<p>x</p>" || out.Text != "" {
		t.Errorf("RenderForSend = %+v, want no derived text", out)
	}
	withText := mustParse(t, "", "<p>{{a}}</p>", "T {{a}}")
	if out, _ := withText.RenderForSend(map[string]any{"a": "x"}); out.Text != "T x" {
		t.Errorf("a template's own text = %q, want %q", out.Text, "T x")
	}
}

// TestRenderBodyWithSkipsOnlyTheSubject: the body alone is the body
// RenderForSendWith renders, footer included, with no subject; the work
// limit still refuses what it refuses.
func TestRenderBodyWithSkipsOnlyTheSubject(t *testing.T) {
	tpl := mustParse(t, "Hi {{name}}", "<html><body><p>Hi {{name}}</p></body></html>", "Hi {{name}}")
	f := FooterOf(Links{Unsubscribe: "https://u.example/x", Preferences: "https://p.example/y"}, true, true)
	v := map[string]any{"name": "Ann"}
	with, err := tpl.RenderForSendWith(v, f)
	if err != nil {
		t.Fatal(err)
	}
	body, err := tpl.RenderBodyWith(v, f)
	if err != nil {
		t.Fatal(err)
	}
	if with.Subject != "Hi Ann" || body.Subject != "" {
		t.Fatalf("subjects %q and %q, want %q and none", with.Subject, body.Subject, "Hi Ann")
	}
	with.Subject = ""
	if body != with || !strings.Contains(body.HTML, "https://u.example/x") {
		t.Fatalf("body alone %q, want %q", body, with)
	}
	nested := mustParse(t, "", "{{#a}}{{#a}}{{#a}}{{#a}}{{/a}}{{/a}}{{/a}}{{/a}}", "")
	list := make([]any, 100)
	for i := range list {
		list[i] = i
	}
	if _, err := nested.RenderBodyWith(map[string]any{"a": list}, Footer{}); !errors.Is(err, ErrTooMuchWork) {
		t.Fatalf("over the work limit: %v, want ErrTooMuchWork", err)
	}
}
