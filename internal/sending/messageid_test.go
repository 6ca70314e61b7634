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

// TestStoredMessageID (#47): only the derived Message-ID is left out of
// the row; a client's own (a submission's), or one under another domain,
// is kept, and each reads back as given.
func TestStoredMessageID(t *testing.T) {
	const id = "em_06h2f8vytcwe7rqrcqefjm2tnm"
	for _, tc := range []struct{ from, messageID, stored string }{
		{"onboarding@acme.example", "<" + id + "@acme.example>", ""},
		{`"News" <News@ACME.example>`, "<" + id + "@acme.example>", ""},
		{"onboarding@acme.example", "<" + id + "@other.example>", "<" + id + "@other.example>"},
		{"onboarding@acme.example", "<client-own@acme.example>", "<client-own@acme.example>"},
		{"onboarding@acme.example", "<em_other@acme.example>", "<em_other@acme.example>"},
	} {
		got := storedMessageID(id, tc.from, tc.messageID)
		if got != tc.stored {
			t.Errorf("storedMessageID(%q, %q) = %q, want %q", tc.from, tc.messageID, got, tc.stored)
		}
		if back := readMessageID(id, tc.from, got); back != tc.messageID {
			t.Errorf("readMessageID(%q, %q) = %q, want %q", tc.from, got, back, tc.messageID)
		}
	}
}
