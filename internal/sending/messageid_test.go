package sending

import (
	"strings"
	"testing"
)

// TestValidMessageID: a client's Message-ID is kept only when it is an RFC
// 5322 msg-id as written today (no comments, spaces or obsolete forms).
func TestValidMessageID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"<campaign-7.bob@acme.example>": true,
		"<a!#$%&'*+/=?^_`{|}~-b@x>":     true,
		"<abc@[192.0.2.1]>":             true,
		"campaign-7.bob@acme.example":   false, // no angle brackets
		"<campaign 7@acme.example>":     false,
		"<a@b@c>":                       false,
		"<.a@b>":                        false,
		"<a..b@c>":                      false,
		"<a@>":                          false,
		"<a@b> (comment)":               false,
		"<a@b>; <c@d>":                  false, // two headers joined
		"<a\"q\"@b>":                    false,
		"<a@[b]c>":                      false,
		"<>":                            false,
	} {
		if got := validMessageID(id); got != want {
			t.Errorf("validMessageID(%q) = %v, want %v", id, got, want)
		}
	}
	long := "<" + strings.Repeat("a", 246) + "@b.c>"
	if validMessageID(long) {
		t.Errorf("a %d-character Message-ID was taken", len(long))
	}
}
