package outbound

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// wordByWordText and oldSpaceAt are text and spaceAt as they were before
// runs were copied whole: each word written on its own.
func (t *textWriter) wordByWordText(s []byte, inLink bool) {
	if len(s) == 0 {
		return
	}
	if isSpace(s[0]) {
		t.pendingSpace = true
	}
	for i := 0; i < len(s); {
		if n := oldSpaceAt(s, i); n > 0 {
			i += n
			continue
		}
		j := i
		for j < len(s) { // to the next space; ASCII without spaceAt's call
			if c := s[j]; c < utf8.RuneSelf {
				if isSpace(c) || c == '\v' {
					break
				}
				j++
				continue
			}
			r, n := utf8.DecodeRune(s[j:])
			if unicode.IsSpace(r) {
				break
			}
			j += n
		}
		t.word(s[i:j], inLink)
		t.pendingSpace = true
		i = j
	}
	if !isSpace(s[len(s)-1]) {
		t.pendingSpace = false
	}
}
func oldSpaceAt(s []byte, i int) int {
	if c := s[i]; c < utf8.RuneSelf {
		if isSpace(c) || c == '\v' {
			return 1
		}
		return 0
	}
	r, n := utf8.DecodeRune(s[i:])
	if unicode.IsSpace(r) {
		return n
	}
	return 0
}

// FuzzTextRuns holds the run-copying text to word-by-word writing, from
// any state of the writer.
func FuzzTextRuns(f *testing.F) {
	for _, s := range []string{"a b  c", " lead and trail ", "tab\tand\nnl", "nbsp\u00a0here", "v\vf\fr\r", "x \u2003y", "\xff \xfe", "a ",
		// plainRun's partial words: a space before a space, a control or
		// a non-ASCII byte inside the eight, and as the eighth.
		"Lorem ipsum dolor sit amet, consectetur adipiscing", "abc  defghijk", "abc \ndefghijk", "ab \u00a0cdefghij", "ab \xc3\xa9cdefghij", "abcdefg hijklmno", "ab\x01 cdefghijk", "a\x7f b\x7fcdefgh",
		// plainText's whole tokens, and tokens just outside it.
		"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.", "abcdefgh", "abcdefg ", " abcdefg", "abcdefghijklmnop  q",
		"abcdefghijklmno  ", "abc\tdefghijklmn", "abcdefghijklmn\xc3\xa9", "ab cd ef gh ij kl"} {
		f.Add([]byte(s), "prior", true, false)
		f.Add([]byte(s), "", false, true)
	}
	f.Fuzz(func(t *testing.T, s []byte, prior string, pending, inLink bool) {
		got, want := textWriter{pendingSpace: pending, b: []byte(prior)}, textWriter{pendingSpace: pending, b: []byte(prior)}
		got.text(s, inLink)
		want.wordByWordText(s, inLink)
		if string(got.b) != string(want.b) || got.pendingSpace != want.pendingSpace || string(got.linkText) != string(want.linkText) || got.trailingNL != want.trailingNL {
			t.Fatalf("text(%q) after %q: got %q (pending %v), want %q (pending %v)", s, prior, got.b, got.pendingSpace, want.b, want.pendingSpace)
		}
	})
}
