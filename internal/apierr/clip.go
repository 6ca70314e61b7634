package apierr

import "unicode/utf8"

// Clip shortens what a message quotes of a request to at most n characters
// (runes), with an ellipsis when it cut, so that an echoed value never
// floods an answer or splits a character.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
