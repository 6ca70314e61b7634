package render

import (
	"strings"
	"testing"
)

var footerLinks = Links{Unsubscribe: "https://m.example/unsubscribe/tok?a=1&b=2", Preferences: "https://m.example/preferences/tok2"}

// TestFooterBytes pins the footer's bytes in both parts, as a recipient
// receives them, whether written as the body renders or added after.
func TestFooterBytes(t *testing.T) {
	tpl := mustParse(t, "Hi", "<html><body><p>Hi {{ name }}</p></body></html>", "Hi {{ name }}")
	const html = `<html><body><p>Hi Ann</p><div class="mailroom-unsubscribe-footer" style="margin-top:24px;font-size:12px;color:#666">` +
		`You receive this because you subscribed. <a href="https://m.example/unsubscribe/tok?a=1&amp;b=2">Unsubscribe</a> | ` +
		`<a href="https://m.example/preferences/tok2">Email preferences</a></div></body></html>`
	const text = "Hi Ann\n\n--\nUnsubscribe: https://m.example/unsubscribe/tok?a=1&b=2\nEmail preferences: https://m.example/preferences/tok2\n"
	f := FooterOf(footerLinks, true, true)
	with, err := tpl.RenderForSendWith(map[string]any{"name": "Ann"}, f)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := tpl.RenderForSend(map[string]any{"name": "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]Output{"RenderForSendWith": with, "AddFooterTo": AddFooterTo(plain, footerLinks, true, true)} {
		if out.HTML != html || out.Text != text {
			t.Errorf("%s:\nhtml %q\nwant %q\ntext %q\nwant %q", name, out.HTML, html, out.Text, text)
		}
	}
}

// TestRenderForSendWithIsAddTo: writing the footer as the body renders puts
// it exactly where adding it afterwards does, whatever the template's end:
// a static </body>, one in another case, one a variable writes after the
// template's own, none, a section around it, an empty part.
func TestRenderForSendWithIsAddTo(t *testing.T) {
	vars := map[string]any{"name": "Ann", "late": "</body>!", "on": true, "off": false, "tail": "</body></html>"}
	for _, c := range []struct{ html, text string }{
		{"<body>{{ name }}</body></html>", "Hi {{ name }}"},
		{"<BODY>{{ name }}</Body>\n</HTML>\n", ""},
		{"<body>{{ name }}</body>{{{ late }}}", ""},
		{"<body>{{ name }}</body>{{ late }}", ""},
		{"<body>{{ name }}</body></html>{{{ tail }}}", ""},
		{"<p>{{ name }}</p>", "{{# off }}never{{/ off }}"},
		{"{{# on }}<body>{{ name }}</body>{{/ on }}", "{{ name }}"},
		{"{{# off }}<body>{{ name }}</body>{{/ off }}", ""},
		{"{{=<% %>=}}<body><% name %></body></html>", ""},
		{"<body>{{ name }}</body></html></body></html>", ""},
		{"<body></bo{{ name }}dy></body>", ""},
		{"</body>", "x"},
	} {
		tpl := mustParse(t, "s", c.html, c.text)
		for _, f := range []Footer{FooterOf(footerLinks, true, true), FooterOf(footerLinks, true, false), FooterOf(footerLinks, false, true), {}} {
			got, err := tpl.RenderForSendWith(vars, f)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := tpl.RenderForSend(vars)
			if err != nil {
				t.Fatal(err)
			}
			if want := f.AddTo(plain); got != want {
				t.Errorf("html %q, text %q, footer %v:\ngot  %q\nwant %q", c.html, c.text, f != Footer{}, got, want)
			}
		}
	}
}

// TestRenderForSendWithOneBuffer: a body whose html ends with a static
// </body> gets its footer without a second copy of the body: no more
// allocations than the render without one.
func TestRenderForSendWithOneBuffer(t *testing.T) {
	tpl := mustParse(t, "Hi {{ name }}", "<html><body><p>Hi {{ name }}</p>"+strings.Repeat("<p>Lorem ipsum dolor sit amet.</p>\n", 400)+"</body></html>", "")
	vars := map[string]any{"name": "Ann"}
	f := FooterOf(footerLinks, true, true)
	plain := testing.AllocsPerRun(50, func() { _, _ = tpl.RenderForSend(vars) })
	with := testing.AllocsPerRun(50, func() { _, _ = tpl.RenderForSendWith(vars, f) })
	if with > plain {
		t.Errorf("%.0f allocations with the footer, %.0f without: the body is copied again", with, plain)
	}
}
