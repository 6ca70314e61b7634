package broadcasts

import (
	"encoding/json"
	"maps"
	"testing"
)

// FuzzDecodeMap: the recipients' merge data reads as encoding/json reads it
// into a map of strings, whatever the stored text.
func FuzzDecodeMap(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"city":"City1","first_name":"Name1","plan":"pro"}`, `{"a":"x","a":"y"}`,
		`{"a":"\u00e9\n"}`, `{"a":1}`, `{"a":"x",}`, `{"a":"x"} x`, `{"a":{"b":"c"}}`, "{\"a\":\"\xff\"}", `{"é":"ü"}`,
		"{\n\t\"a\" : \"b\" ,\r\n \"c\":\"\"}", `null`, ``, `{"a":null}`, `{"a":"x" "b":"y"}`, "{\"a\":\"\x01\"}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := map[string]string{}
		_ = json.Unmarshal([]byte(s), &want)
		if got := decodeMap(s); !maps.Equal(got, want) {
			t.Fatalf("decodeMap(%q) = %q, encoding/json reads %q", s, got, want)
		}
	})
}

// TestDecodeMapFastPath: the contacts area's plain objects take the fast
// path (no encoding/json), and what it reads is what encoding/json reads.
func TestDecodeMapFastPath(t *testing.T) {
	for _, s := range []string{`{}`, `{"city":"City1","first_name":"Name1","plan":"pro"}`, `{"Company":"Acme & Co","note":"<b>é</b>"}`} {
		m, ok := decodeFlat(s)
		want := map[string]string{}
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if !ok || !maps.Equal(m, want) {
			t.Errorf("decodeFlat(%q) = %q, %v; want %q by the fast path", s, m, ok, want)
		}
	}
	for _, s := range []string{`{"a":"\n"}`, `{"a":1}`, `{"a":"x",}`, "{\"a\":\"\xff\"}"} {
		if _, ok := decodeFlat(s); ok {
			t.Errorf("decodeFlat(%q) took the fast path", s)
		}
	}
}
