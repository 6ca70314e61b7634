package domains_test

import (
	"net/http"
	"strings"
	"testing"

	"mailroom/internal/apierr"
	"mailroom/internal/domains"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"example.com", "example.com"},
		{"  Example.COM.  ", "example.com"},
		{"mail.sub.example.co.uk", "mail.sub.example.co.uk"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"MÜNCHEN.de", "xn--mnchen-3ya.de"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"a-b.example", "a-b.example"},
		{"123.example", "123.example"},
		{strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com"},
	}
	for _, tt := range tests {
		got, err := domains.Normalize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNormalizeRejects(t *testing.T) {
	t.Parallel()
	long := strings.Repeat(strings.Repeat("a", 60)+".", 5) + "com" // 308 chars
	for _, in := range []string{
		"", "   ", ".", "com", "localhost", "example..com", ".example.com", "example.com..",
		"-a.example", "a-.example", strings.Repeat("a", 64) + ".com", long,
		"1.2.3.4", "example.123", "[::1]", "::1", "*.example.com", "exa mple.com",
		"exa_mple.com", "user@example.com", "http://example.com", "example.com/path",
		"xn--zz.example", "ab--cd.example",
	} {
		_, err := domains.Normalize(in)
		e, ok := apierr.As(err)
		if !ok || e.Status != http.StatusBadRequest || e.Code != "invalid_request" {
			t.Errorf("Normalize(%q) err = %v, want 400 invalid_request", in, err)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"example.com", "Example.COM.", "bücher.example", "xn--bcher-kva.example", "1.2.3.4",
		"*.example.com", "a..b", "-a.b", "ｅｘａｍｐｌｅ．ｃｏｍ", "example.com\x00", "ß.de", "\u200d.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := domains.Normalize(in)
		if err != nil {
			if _, ok := apierr.As(err); !ok {
				t.Fatalf("Normalize(%q) error is not *apierr.Error: %v", in, err)
			}
			return
		}
		again, err := domains.Normalize(out)
		if err != nil || again != out {
			t.Fatalf("Normalize(%q) = %q, which re-normalizes to %q, %v", in, out, again, err)
		}
	})
}
