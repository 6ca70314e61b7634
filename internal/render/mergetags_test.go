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
	for _, s := range []string{"*|FNAME|*", "*|UNSUB", "a *|IF:X|* b", "{{{RESEND_UNSUBSCRIBE_URL}}}", "*|*|*|", "|**|", strings.Repeat("*|A|*", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		out, err := translateTags(s)
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
