package smtpin

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"mailroom/internal/outbound"
)

var testVERP = outbound.NewVERP(func(b []byte) []byte {
	m := hmac.New(sha256.New, []byte("test key"))
	m.Write(b)
	return m.Sum(nil)
})

func TestRecipient(t *testing.T) {
	signed := testVERP.Address("em_abc123", "example.com")
	for _, tc := range []struct {
		to string
		id string
		ok bool
	}{
		{signed, "em_abc123", true},
		{"<" + strings.ToUpper(signed) + ">", "em_abc123", true},
		{strings.ToUpper(signed), "em_abc123", true},
		{"bounces+em_abc123@example.com", "", false}, // unsigned
		{strings.Replace(signed, "abc123", "abc124", 1), "", false},
		{"fbl@mailroom.test", "", true},
		{"FBL@sending.example.com", "", true},
		{"bounces@example.com", "", false},
		{"bounces+@example.com", "", false},
		{"bounces+em-1@example.com", "", false},
		{"postmaster@example.com", "", false},
		{"fbl@", "", false},
		{"", "", false},
	} {
		id, ok := recipient(testVERP, tc.to)
		if id != tc.id || ok != tc.ok {
			t.Errorf("recipient(%q) = %q, %v; want %q, %v", tc.to, id, ok, tc.id, tc.ok)
		}
	}
	if id, ok := recipient(nil, signed); ok || id != "" {
		t.Errorf("without a VERP key a bounce address was taken: %q", id)
	}
}

func FuzzRecipient(f *testing.F) {
	for _, s := range []string{testVERP.Address("em_abc", "example.com"), "bounces+em_abc@example.com", "fbl@x", "a@b", "bounces+@", "+@", "@@", "bounces+em_x@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, to string) {
		id, ok := recipient(testVERP, to)
		if !ok && id != "" {
			t.Fatalf("refused %q but returned id %q", to, id)
		}
		if id != "" && strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Fatalf("id %q from %q has unexpected characters", id, to)
		}
	})
}
