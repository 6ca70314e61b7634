package apierr

import "testing"

func TestClip(t *testing.T) {
	cases := []struct {
		name, in string
		n        int
		want     string
	}{
		{"short stays", "topic", 10, "topic"},
		{"exactly n stays", "abcde", 5, "abcde"},
		{"longer is cut with an ellipsis", "abcdef", 5, "abcde…"},
		{"cut counts characters, not bytes", "ééééé", 3, "ééé…"},
		{"a multi-byte character is never split", "日本語のテキスト", 2, "日本…"},
		{"empty", "", 3, ""},
	}
	for _, c := range cases {
		if got := Clip(c.in, c.n); got != c.want {
			t.Errorf("%s: Clip(%q, %d) = %q, want %q", c.name, c.in, c.n, got, c.want)
		}
	}
}
