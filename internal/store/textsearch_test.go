package store_test

import (
	"strings"
	"testing"

	"mailroom/internal/store"
)

// TestExcerpt: the passage holding the most of the words, from a few words
// before its first match, "…" where the text goes on, case folded, whole
// words only, a repeated word counted once, and the start when nothing
// matches.
func TestExcerpt(t *testing.T) {
	long := strings.Repeat("filler ", 40)
	for _, c := range []struct {
		text  string
		words []string
		want  string
	}{
		{"Shall we meet at the ferry?", []string{"ferry"}, "Shall we meet at the ferry?"},
		{long + "the ferry\n leaves  at noon " + long, []string{"ferry"},
			"…filler filler the ferry leaves at noon filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler…"},
		// The window with both words wins over an earlier one with one.
		{"noon " + long + "ferry at noon " + long, []string{"ferry", "noon"},
			"…filler filler filler ferry at noon filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler…"},
		{"FERRY " + long, []string{"ferry"}, "FERRY filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler…"},
		{"ferryman and ferries", []string{"ferry"}, "ferryman and ferries"},
		{long, []string{"ferry", "ferry"}, "filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler…"},
		{"", []string{"ferry"}, ""},
		{"café au lait, Café!", []string{"café"}, "café au lait, Café!"},
	} {
		if got := store.Excerpt(c.text, c.words); got != c.want {
			t.Errorf("Excerpt(%.40q, %q)\n got %q\nwant %q", c.text, c.words, got, c.want)
		}
	}
}
