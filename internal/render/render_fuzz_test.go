package render

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRender: any template and any JSON variables either fail to parse,
// fail with an error, or render within the limits, with one-line subjects.
func FuzzRender(f *testing.F) {
	f.Add("Hi {{name}}", "<p>{{name}}</p>", "{{#items}}{{.}}{{/items}}", `{"name":"<b>\r\n","items":[1,2]}`, "pre {{name}}")
	f.Add("{{#a}}", "{{/a}}", "{{^a}}{{a}}{{/a}}", `{}`, "")
	f.Add("{{=<% %>=}}<% x %>", "{{{raw}}}", "{{> partial}}", `{"raw":"<script>"}`, "{{")
	f.Add("", "{{#a}}{{#a}}{{#a}}x{{/a}}{{/a}}{{/a}}", "", `{"a":[1,2,3,4,5,6,7,8,9,10]}`, "")
	f.Add("{{a.b.c}}", strings.Repeat("{{#a}}", 50)+strings.Repeat("{{/a}}", 50), "{{!comment}}", `{"a":{"b":{"c":"d"}}}`, "{{&a}}")
	f.Fuzz(func(t *testing.T, subject, html, text, vars, preheader string) {
		tpl, err := Parse(subject, html, text)
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal([]byte(vars), &m) != nil {
			m = nil
		}
		out, err := tpl.Render(m, preheader)
		if err != nil {
			return
		}
		if strings.ContainsAny(out.Subject, "\r\n") {
			t.Fatalf("subject %q has a line break", out.Subject)
		}
		if len(out.HTML) > MaxOutputBytes+4096 || len(out.Text) > MaxOutputBytes {
			t.Fatalf("output over the cap: html %d, text %d", len(out.HTML), len(out.Text))
		}
		// The footer written as the body renders lands where adding it to
		// the rendered body puts it.
		f := FooterOf(Links{Unsubscribe: "https://u.example/" + vars, Preferences: "https://p.example/"}, true, true)
		plain, err1 := tpl.RenderForSend(m)
		with, err2 := tpl.RenderForSendWith(m, f)
		if (err1 == nil) != (err2 == nil) || (err1 == nil && with != f.AddTo(plain)) {
			t.Fatalf("footer written while rendering: %q (%v), added after: %q (%v)", with, err2, f.AddTo(plain), err1)
		}
		// The body alone (a broadcast's at delivery) is the same body.
		if err2 == nil {
			body, err := tpl.RenderBodyWith(m, f)
			want := with
			want.Subject = ""
			if err != nil || body != want {
				t.Fatalf("body alone: %q (%v), want %q", body, err, want)
			}
		}
	})
}
