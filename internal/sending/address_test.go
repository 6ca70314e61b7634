package sending

import (
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 63)
	tests := []struct {
		in        string
		wantName  string
		wantEmail string
		wantErr   string // substring of the reason; "" means success
	}{
		{in: "a@b.co", wantEmail: "a@b.co"},
		{in: "  a@b.co  ", wantEmail: "a@b.co"},
		{in: "Alice <alice@Example.COM>", wantName: "Alice", wantEmail: "alice@example.com"},
		{in: "<alice@example.com>", wantEmail: "alice@example.com"},
		{in: `"Doe, Jane" <jane@example.com>`, wantName: "Doe, Jane", wantEmail: "jane@example.com"},
		{in: `"Jane \"JD\" Doe" <jane@example.com>`, wantName: `Jane "JD" Doe`, wantEmail: "jane@example.com"},
		{in: "=?utf-8?q?J=C3=B6rg?= <j@example.com>", wantName: "Jörg", wantEmail: "j@example.com"},
		{in: "Jörg <j@example.com>", wantName: "Jörg", wantEmail: "j@example.com"},
		{in: "user@bücher.example", wantEmail: "user@xn--bcher-kva.example"},
		{in: "user@BÜCHER.example", wantEmail: "user@xn--bcher-kva.example"},
		{in: "First.Last+tag@sub.example.org", wantEmail: "First.Last+tag@sub.example.org"},
		{in: "o'neil@example.ie", wantEmail: "o'neil@example.ie"},
		{in: long + "xy@example.com", wantErr: "longer than 64"},
		{in: long + "x@example.com", wantEmail: long + "x@example.com"},
		{in: long + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 63) + ".com", wantErr: "254"},
		{in: "", wantErr: "empty"},
		{in: "   ", wantErr: "empty"},
		{in: "alice.example.com", wantErr: "no @"},
		{in: "@example.com", wantErr: ""}, // checked below: any error
		{in: "alice@", wantErr: ""},
		{in: "alice@localhost", wantErr: "without a dot"},
		{in: "alice@1.2.3.4", wantErr: "host name"},
		{in: "alice@[1.2.3.4]", wantErr: "IP address"},
		{in: "alice@exa_mple.com", wantErr: "host name"},
		{in: "alice@-example.com", wantErr: "host name"},
		{in: "alice@example..com", wantErr: ""},
		{in: "a@b.co\r\nBcc: evil@x.com", wantErr: "control"},
		{in: "Alice\n <a@b.co>", wantErr: "control"},
		{in: "a\x00@b.co", wantErr: "control"},
		{in: "=?utf-8?q?a=0D=0Ab?= <a@b.co>", wantErr: "control"},
		{in: `"john doe"@example.com`, wantErr: "local part"},
		{in: "jöhn@example.com", wantErr: ""},
		{in: "a..b@example.com", wantErr: ""},
		{in: "a@b.co, c@d.co", wantErr: ""},
		{in: "a@b@c.co", wantErr: ""},
	}
	mustFail := map[string]bool{"@example.com": true, "alice@": true, "alice@example..com": true, "jöhn@example.com": true,
		"a..b@example.com": true, "a@b.co, c@d.co": true, "a@b@c.co": true}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAddress(tt.in)
			if tt.wantErr != "" || mustFail[tt.in] {
				if err == nil {
					t.Fatalf("ParseAddress(%q) = %+v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseAddress(%q) error %q, want it to contain %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAddress(%q): %v", tt.in, err)
			}
			if got.Name != tt.wantName || got.Email != tt.wantEmail {
				t.Fatalf("ParseAddress(%q) = %+v, want {%q %q}", tt.in, got, tt.wantName, tt.wantEmail)
			}
			assertRoundTrip(t, got)
		})
	}
}

func TestAddressString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a    Address
		want string
	}{
		{Address{Email: "a@b.co"}, "a@b.co"},
		{Address{Name: "Alice", Email: "a@b.co"}, `"Alice" <a@b.co>`},
		{Address{Name: "Doe, Jane", Email: "a@b.co"}, `"Doe, Jane" <a@b.co>`},
		{Address{Name: "Jörg", Email: "a@b.co"}, "=?utf-8?q?J=C3=B6rg?= <a@b.co>"},
		{Address{Name: "=?x?", Email: "a@b.co"}, "=?utf-8?q?=3D=3Fx=3F?= <a@b.co>"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.a, got, tt.want)
		}
		assertRoundTrip(t, tt.a)
	}
}

// assertRoundTrip checks that a formatted address reads back the same.
func assertRoundTrip(t *testing.T, a Address) {
	t.Helper()
	back, err := ParseAddress(a.String())
	if err != nil {
		t.Fatalf("ParseAddress(%q) (from %+v): %v", a.String(), a, err)
	}
	if back != a {
		t.Fatalf("round trip of %+v via %q gave %+v", a, a.String(), back)
	}
}

func BenchmarkParseAddress(b *testing.B) {
	for _, s := range []string{"Bench <onboarding@bench.test>", "delivered@bench.test", `"Doe, Jane" <jane@example.com>`} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseAddress(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
