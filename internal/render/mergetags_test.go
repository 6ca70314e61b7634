package render

import (
	"strings"
	"testing"
	"time"
)

func TestMergeTagSpellings(t *testing.T) {
	tpl, err := Parse("Hi *|FNAME|* *|LNAME|*", `<a href="*|UNSUB|*">out</a> <a href="*|UPDATE_PROFILE|*">prefs</a> *|EMAIL|* *|COMPANY|* <a href="{{{RESEND_UNSUBSCRIBE_URL}}}">x</a>`, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := tpl.RenderForSend(map[string]any{"first_name": "Ann", "last_name": "Lee", "email": "ann@x.example", "company": "Acme",
		UnsubscribeURL: "https://u.example/unsubscribe/t", PreferencesURL: "https://u.example/preferences/t"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Subject != "Hi Ann Lee" || !strings.Contains(out.HTML, `href="https://u.example/unsubscribe/t">out`) ||
		!strings.Contains(out.HTML, `href="https://u.example/preferences/t">prefs`) || !strings.Contains(out.HTML, "ann@x.example Acme") ||
		strings.Count(out.HTML, "https://u.example/unsubscribe/t") != 2 {
		t.Fatalf("rendered %+v", out)
	}
	for src, want := range map[string]string{
		"Hi *|FNAME":            "html: the merge tag *|FNAME at line 1 is not closed",
		"a\nb *|IF:VIP|* c |*":  "line 2 is a Mailchimp conditional",
		"*|a b|*":               "is not a merge tag",
		"x\n\n*|FNAME\n|*":      "line 3 is not closed",
		"{{ unsubscribe_url":    "html does not parse",
		"*|FNAME|* *|LNAME":     "*|LNAME at line 1",
		"fine *|F_1|* and *||*": "is not a merge tag",
	} {
		if _, err := Parse("s", src, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want %q", src, err, want)
		}
	}
}

// FuzzTranslateTags: any source translates in linear time, and what comes
// out holds no Mailchimp tag.
func FuzzTranslateTags(f *testing.F) {
	for _, s := range []string{"*|FNAME|*", `{{ a | default: "b" }}`, "{{{ a|default:'b' }}}", "{{ a | b }}", "*|UNSUB", "a *|IF:X|* b", "{{{RESEND_UNSUBSCRIBE_URL}}}", "*|*|*|", "|**|", strings.Repeat("*|A|*", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		out, err := translateTags(s)
		if err == nil {
			_, _ = translateDefaults(out, map[string]int{})
		}
		if d := time.Since(start); d > 100*time.Millisecond && len(s) < 1<<16 {
			t.Fatalf("%d bytes took %v", len(s), d)
		}
		if err == nil && strings.Contains(out, "*|") && !strings.Contains(s, "{{") {
			if i := strings.Index(out, "*|"); strings.Contains(out[i:], "|*") {
				t.Fatalf("translateTags(%q) left a tag: %q", s, out)
			}
		}
	})
}

// TestDefaultValues: {{ name | default: "text" }} is the value when it is
// set and the text when it is missing or empty, in every part and with
// Mailchimp's spelling beside it; any other filter is refused with its line.
func TestDefaultValues(t *testing.T) {
	tpl, err := Parse(`Hi {{ first_name | default: "there" }}`, `<p>Hi {{first_name|default:'friend'}}, *|LNAME|* {{{ trigger.plan | default: "<b>free</b>" }}}</p>`, `Hi {{ first_name | default: "there" }}!`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		vars                map[string]any
		subject, html, text string
	}{
		{map[string]any{"first_name": "Ada", "last_name": "L", "trigger": map[string]any{"plan": "pro"}}, "Hi Ada", "<p>Hi Ada, L pro</p>", "Hi Ada!"},
		{map[string]any{"first_name": "", "last_name": "<L>"}, "Hi there", "<p>Hi friend, &lt;L&gt; <b>free</b></p>", "Hi there!"},
		{map[string]any{"first_name": "<Ann>"}, "Hi <Ann>", "<p>Hi &lt;Ann&gt;,  <b>free</b></p>", "Hi <Ann>!"},
	} {
		if n := tpl.Names(); len(n) != 1 || n[0] != "last_name" {
			t.Errorf("names %v: a name with a default is not required", n)
		}
		out, err := tpl.RenderForSend(c.vars)
		if err != nil || out.Subject != c.subject || out.HTML != c.html || out.Text != c.text {
			t.Errorf("%v: %+v %v", c.vars, out, err)
		}
	}
	for src, want := range map[string]string{
		"a\n{{ first_name | upcase }}":      "at line 2 has a filter Mailroom does not have",
		`{{ first_name | default: there }}`: "has a filter",
	} {
		if _, err := Parse("s", src, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want %q", src, err, want)
		}
	}
	if tpl, err := Parse("s", `{{ a | default: "x" }} {{ a }}`, ""); err != nil || len(tpl.Names()) != 1 {
		t.Errorf("a name also used without a default is required: %v", err)
	}
	if _, err := Parse("s", "{{! a | b }} {{ x }} | {{ y }}", ""); err != nil {
		t.Errorf("a pipe outside a variable tag: %v", err)
	}
}
