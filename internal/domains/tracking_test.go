package domains_test

import (
	"strings"
	"testing"

	"mailroom/internal/domains"
)

func TestExpandTrackingHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"links":                "links.example.com",
		" Links.Example.COM. ": "links.example.com",
		"a.b.example.com":      "a.b.example.com",
		"example.com":          "",
		"links.example.net":    "",
		"xexample.com":         "",
		"bad label":            "",
		"":                     "",
		"-links":               "",
	} {
		got, err := domains.ExpandTrackingHost("example.com", in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("%q -> %q, %v; want %q", in, got, err, want)
		}
	}
}

func FuzzExpandTrackingHost(f *testing.F) {
	for _, s := range []string{"links", "links.example.com", "LINKS.EXAMPLE.COM.", "a..example.com", "bücher", "*.example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		host, err := domains.ExpandTrackingHost("example.com", in)
		if err != nil {
			return
		}
		if !strings.HasSuffix(host, ".example.com") {
			t.Fatalf("%q expanded outside the domain: %q", in, host)
		}
		if again, err := domains.Normalize(host); err != nil || again != host {
			t.Fatalf("%q expanded to non-canonical %q", in, host)
		}
	})
}
