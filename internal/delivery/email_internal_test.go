package delivery

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzPlainStrings: where plainStrings decodes an address list, it reads
// what json.Unmarshal reads.
func FuzzPlainStrings(f *testing.F) {
	for _, s := range []string{
		`[]`, ` [ ] `, `["a@b.co"]`, `["Ann <ann@example.net>", "bob@example.net"]`, "[\"a\",\n\t\"b\"]",
		`["a",]`, `[,"a"]`, `["a" "b"]`, `["a\"b"]`, `["a\u00e9"]`, `["é"]`, `null`, `"a"`, `["a",1]`, `[["a"]]`,
		"\u00a0[]", `["a"]x`, `["`, `[""]`, `["a\tb"]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got []string
		if !plainStrings(s, &got) {
			return
		}
		var want []string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("plainStrings(%q) = %q; json.Unmarshal refuses it: %v", s, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("plainStrings(%q) = %#v; json.Unmarshal reads %#v", s, got, want)
		}
	})
}
