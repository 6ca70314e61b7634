package smtpin

import (
	"strings"
	"testing"
)

func TestRecipient(t *testing.T) {
	for _, tc := range []struct {
		to string
		id string
		ok bool
	}{
		{"bounces+em_abc123@example.com", "em_abc123", true},
		{"<BOUNCES+EM_ABC123@Example.COM>", "", false}, // angle brackets are stripped by go-smtp before Rcpt
		{"BOUNCES+EM_ABC123@Example.COM", "em_abc123", true},
		{"fbl@mailroom.test", "", true},
		{"FBL@sending.example.com", "", true},
		{"bounces@example.com", "", false},
		{"bounces+@example.com", "", false},
		{"bounces+em-1@example.com", "", false},
		{"postmaster@example.com", "", false},
		{"fbl@", "", false},
		{"", "", false},
	} {
		id, ok := recipient(tc.to)
		if id != tc.id || ok != tc.ok {
			t.Errorf("recipient(%q) = %q, %v; want %q, %v", tc.to, id, ok, tc.id, tc.ok)
		}
	}
}

func FuzzRecipient(f *testing.F) {
	for _, s := range []string{"bounces+em_abc@example.com", "fbl@x", "a@b", "bounces+@", "+@", "@@", "bounces+em_x@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, to string) {
		id, ok := recipient(to)
		if !ok && id != "" {
			t.Fatalf("refused %q but returned id %q", to, id)
		}
		if id != "" && strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Fatalf("id %q from %q has unexpected characters", id, to)
		}
	})
}
