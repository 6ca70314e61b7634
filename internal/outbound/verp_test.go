package outbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"
)

func testVERP(key string) *VERP {
	return NewVERP(func(b []byte) []byte {
		m := hmac.New(sha256.New, []byte(key))
		m.Write(b)
		return m.Sum(nil)
	})
}

func TestVERP(t *testing.T) {
	t.Parallel()
	v := testVERP("k1")
	addr := v.Address("em_01h2x3y4z5", "mail.example.com")
	local, _, _ := strings.Cut(addr, "@")
	if !strings.HasPrefix(addr, "bounces+em_01h2x3y4z5-") || !strings.HasSuffix(addr, "@mail.example.com") || len(local) != len("bounces+em_01h2x3y4z5-")+verpTagLen {
		t.Fatal(addr)
	}
	// A real id: the local part stays within RFC 5321's 64 characters.
	if long := v.Address("em_"+strings.Repeat("0", 26), "d.test"); strings.IndexByte(long, '@') > 64 {
		t.Fatalf("local part of %s is longer than 64", long)
	}
	tag := strings.TrimPrefix(local, "bounces+em_01h2x3y4z5-")
	other := testVERP("k2").Address("em_01h2x3y4z5", "mail.example.com")
	tests := []struct {
		in     string
		wantID string
		wantOK bool
	}{
		{addr, "em_01h2x3y4z5", true},
		{"<" + addr + ">", "em_01h2x3y4z5", true},
		{strings.ToUpper(addr), "em_01h2x3y4z5", true},
		{"bounces+em_01h2x3y4z5-" + tag + "@elsewhere.test", "em_01h2x3y4z5", true}, // the tag does not bind the domain
		{other, "", false}, // another key's tag
		{"bounces+em_01h2x3y4z6-" + tag + "@mail.example.com", "", false},
		{"bounces+em_01h2x3y4z5-" + tag[:verpTagLen-1] + "@mail.example.com", "", false},
		{"bounces+em_01h2x3y4z5@mail.example.com", "", false}, // unsigned, the old form
		{"bounces@d.test", "", false},
		{"bounces+@d.test", "", false},
		{"bounces+-" + tag + "@d.test", "", false},
		{"x+em_01h2x3y4z5-" + tag + "@d.test", "", false},
		{"bounces+em_01h2x3y4z5-" + tag, "", false},
		{"bounces+" + strings.Repeat("a", 65) + "-" + tag + "@d.test", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		id, ok := v.Parse(tt.in)
		if id != tt.wantID || ok != tt.wantOK {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", tt.in, id, ok, tt.wantID, tt.wantOK)
		}
	}
	for in, want := range map[string]bool{addr: true, "BOUNCES+x@d": true, "bounces+em_1@d.test": true, "bounces@d.test": false, "fbl@d.test": false, "bounces+x": false} {
		if IsVERP(in) != want {
			t.Errorf("IsVERP(%q) = %v", in, !want)
		}
	}
}

func FuzzParseVERP(f *testing.F) {
	v := testVERP("k")
	for _, s := range []string{v.Address("em_abc", "x.test"), "bounces+em_abc@x.test", "<b+1@x>", "a+b+c@d@e", "+@", "bounces+\xff-@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := v.Parse(s)
		if !ok {
			if id != "" {
				t.Fatal("id without ok")
			}
			return
		}
		if id == "" || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Fatalf("bad id %q", id)
		}
		if !IsVERP(s) {
			t.Fatalf("parsed %q but IsVERP says no", s)
		}
		// A parsed id must survive a round trip through Address.
		if back, ok := v.Parse(v.Address(id, "d.test")); !ok || back != id {
			t.Fatalf("round trip %q -> %q", id, back)
		}
	})
}
