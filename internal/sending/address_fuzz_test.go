package sending

import (
	"net/mail"
	"strings"
	"testing"
)

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"a@b.co", "Alice <alice@Example.COM>", `"Doe, Jane" <jane@example.com>`, "=?utf-8?q?J=C3=B6rg?= <j@example.com>",
		"user@bücher.example", "a@b.co\r\nBcc: x@y.z", `"john doe"@example.com`, "a@[1.2.3.4]", "<a@b.co>",
		"=?utf-8?b?QWxpY2U=?= <a@b.co>", `"=?x?" <a@b.co>`, "a(comment)@b.co", "Name <a@xn--bcher-kva.example>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(a.Email, "\r\n\x00 ") || strings.ContainsAny(a.Name, "\r\n\x00") {
			t.Fatalf("ParseAddress(%q) let a control character through: %+v", s, a)
		}
		at := strings.LastIndexByte(a.Email, '@')
		if at < 1 || at > maxLocalPart || len(a.Email) > maxEmailLength || a.Email[at+1:] != strings.ToLower(a.Email[at+1:]) {
			t.Fatalf("ParseAddress(%q) = %+v breaks a limit", s, a)
		}
		formatted := a.String()
		back, err := ParseAddress(formatted)
		if err != nil {
			t.Fatalf("ParseAddress(%q) = %+v, but its String %q does not re-parse: %v", s, a, formatted, err)
		}
		if back != a {
			t.Fatalf("ParseAddress(%q) = %+v; String %q re-parses as %+v", s, a, formatted, back)
		}
	})
}

// Wherever simpleAddress reads an address, net/mail reads the same name and
// addr-spec.
func FuzzSimpleAddressAgrees(f *testing.F) {
	for _, s := range []string{
		"a@b.co", "Alice <alice@Example.COM>", "Acme Billing Team <billing+eu@acme.example>", "<a@b.co>",
		"Bench<a@b.co>", "Two  Spaces <a@b.co>", "J. Doe <a@b.co>", "=?utf-8?q?x?= <a@b.co>", "a..b@c.d", ".a@b.c",
		"a@b.c.", "a@-b.c", "O'Brien <o'brien@x.ie>", "a@b", "x <a@b.c> ", "x <a@b.c>>", "x <<a@b.c>", "a@b@c.d",
		`"News" <onboarding@mailroom.localhost>`, `"A B" <a@b.co>`, `"a" "b" <a@b.co>`, `"" <a@b.co>`, `"=?utf-8?q?x?=" <a@b.co>`,
		`"A  B" <a@b.co>`, `" A" <a@b.co>`, `"J. Doe" <a@b.co>`, `"x\"y" <a@b.co>`, `"News"<a@b.co>`, `""" <a@b.co>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, addr, ok := simpleAddress(s)
		if !ok {
			return
		}
		m, err := mail.ParseAddress(s)
		if err != nil {
			t.Fatalf("simpleAddress(%q) = %q, %q; net/mail refuses it: %v", s, name, addr, err)
		}
		if m.Name != name || m.Address != addr {
			t.Fatalf("simpleAddress(%q) = %q, %q; net/mail reads %q, %q", s, name, addr, m.Name, m.Address)
		}
	})
}

// TestSimpleAddressQuotedName: the form every stored From has (net/mail's
// String quotes each name) is read without net/mail.
func TestSimpleAddressQuotedName(t *testing.T) {
	name, addr, ok := simpleAddress(`"News Team" <onboarding@mailroom.localhost>`)
	if !ok || name != "News Team" || addr != "onboarding@mailroom.localhost" {
		t.Fatalf("got %q %q %v", name, addr, ok)
	}
}
