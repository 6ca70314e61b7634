package httpapi

import (
	"strings"
	"testing"
)

// TestAttachmentsOver: the scanner counts the content_base64 of each
// attachments array apart (a batch's messages each have their limit), skips
// escapes, ignores content_base64 outside an attachments array and strings
// that only look like keys, and stops at the ceiling.
func TestAttachmentsOver(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       bool
	}{
		{"under", `{"attachments":[{"filename":"a","content_base64":"AAAAAAAA"}]}`, false},
		{"over in one", `{"attachments":[{"filename":"a","content_base64":"AAAAAAAAAAAA"}]}`, true},
		{"over across two of one message", `{"attachments":[{"content_base64":"AAAAAA"},{"content_base64":"AAAAAA"}]}`, true},
		{"a batch: each message apart", `{"emails":[{"attachments":[{"content_base64":"AAAAAAAA"}]},{"attachments":[{"content_base64":"AAAAAAAA"}]}]}`, false},
		{"whitespace escapes not counted", `{"attachments":[{"content_base64":"AAAA\n\n\n\n\n\nAAAA"}]}`, false},
		{"outside attachments", `{"content_base64":"AAAAAAAAAAAAAAAA","attachments":[]}`, false},
		{"a value that reads like the key", `{"text":"content_base64","attachments":[{"filename":"content_base64"}],"html":"AAAAAAAAAAAAAAAA"}`, false},
		{"after other fields", `{"html":"` + strings.Repeat("x", 50) + `","attachments" : [ { "content_base64" : "AAAAAAAAAAAA" } ] }`, true},
		{"not json", `AAAAAAAAAAAAAAAAAAAAAAAAA`, false},
	} {
		if got := attachmentsOver(strings.NewReader(c.body), 10, 1<<20); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	over := `{"attachments":[{"content_base64":"` + strings.Repeat("A", 20) + `"}]}`
	if attachmentsOver(strings.NewReader(over), 10, 30) {
		t.Error("read past the ceiling")
	}
}
