package broadcasts

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeMap reads a recipient's stored merge data (attributes or
// member_attributes: a JSON object of strings) as encoding/json would into
// a map[string]string, anything it cannot read left out. The fan-out and
// delivery read it for every recipient: a flat object of plain strings,
// what the contacts area stores, is read without encoding/json's
// reflection (a fifth of the time, a third of the allocations); anything
// else (escapes, other types, nesting, a malformed value) goes to
// encoding/json.
func decodeMap(s string) map[string]string {
	if m, ok := decodeFlat(s); ok {
		return m
	}
	m := map[string]string{}
	_ = json.Unmarshal([]byte(s), &m)
	return m
}

// decodeFlat reads s when it is an object whose keys and values are all
// strings without escapes, control characters or invalid UTF-8; ok is
// false otherwise, and then decodeMap asks encoding/json.
func decodeFlat(s string) (m map[string]string, ok bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return nil, false
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return map[string]string{}, skipSpace(s, i+1) == len(s)
	}
	m = make(map[string]string, 8)
	for {
		k, j, ok := plainString(s, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(s, j)
		if i >= len(s) || s[i] != ':' {
			return nil, false
		}
		v, j, ok := plainString(s, skipSpace(s, i+1))
		if !ok {
			return nil, false
		}
		m[k] = v
		i = skipSpace(s, j)
		if i >= len(s) {
			return nil, false
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case '}':
			return m, skipSpace(s, i+1) == len(s)
		default:
			return nil, false
		}
	}
}

// plainString reads the JSON string at s[i:] when it has no escape, no
// control character and only valid UTF-8 (what encoding/json would read
// unchanged), returning it and the index after its closing quote.
func plainString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			v := s[i+1 : j]
			return v, j + 1, utf8.ValidString(v)
		case c == '\\' || c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}
