package outbound

import (
	"strings"
	"testing"
)

func TestVERP(t *testing.T) {
	t.Parallel()
	addr := VERPAddress("bounces", "em_01h2x3y4z5", "mail.example.com")
	if addr != "bounces+em_01h2x3y4z5@mail.example.com" {
		t.Fatal(addr)
	}
	tests := []struct {
		in     string
		wantID string
		wantOK bool
	}{
		{addr, "em_01h2x3y4z5", true},
		{"<" + addr + ">", "em_01h2x3y4z5", true},
		{"BOUNCES+EM_ABC@MAIL.EXAMPLE.COM", "em_abc", true},
		{"bounces+a+em_x@d.test", "em_x", true},
		{"bounces@d.test", "", false},
		{"bounces+@d.test", "", false},
		{"+em_x@d.test", "", false},
		{"bounces+em-x@d.test", "", false},
		{"bounces+em_x", "", false},
		{"bounces+" + strings.Repeat("a", 65) + "@d.test", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		id, ok := ParseVERP(tt.in)
		if id != tt.wantID || ok != tt.wantOK {
			t.Errorf("ParseVERP(%q) = %q, %v; want %q, %v", tt.in, id, ok, tt.wantID, tt.wantOK)
		}
	}
}

func FuzzParseVERP(f *testing.F) {
	for _, s := range []string{"bounces+em_abc@x.test", "<b+1@x>", "a+b+c@d@e", "+@", "bounces+\xff@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := ParseVERP(s)
		if !ok {
			if id != "" {
				t.Fatal("id without ok")
			}
			return
		}
		if id == "" || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Fatalf("bad id %q", id)
		}
		// A parsed id must survive a round trip through VERPAddress.
		if back, ok := ParseVERP(VERPAddress("bounces", id, "d.test")); !ok || back != id {
			t.Fatalf("round trip %q -> %q", id, back)
		}
	})
}
