package contacts

import (
	"strings"
	"testing"

	"mailroom/internal/apierr"
)

func FuzzParseVCards(f *testing.F) {
	for _, s := range []string{
		"BEGIN:VCARD\r\nVERSION:4.0\r\nN:Lee;Ann;;;\r\nEMAIL;PREF=1:ann@example.com\r\nCATEGORIES:a,b\r\nEND:VCARD\r\n",
		"BEGIN:VCARD\nFN:Bob\nEMAIL:bob@example.com\nEND:VCARD\n",
		"BEGIN:VCARD\r\nEMAIL:x@example.com\r\n",
		"BEGIN:VCARD\r\nEMAIL:x@example.com\r\n folded\r\nEND:VCARD\r\n",
		"BEGIN:VCARD\r\nEMAIL:a\r\n\r\nEND:VCARD\r\n",
		"hello",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cs, err := ParseVCards(text)
		if err != nil {
			if e, ok := apierr.As(err); !ok || e.Status != 400 {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		if len(cs) == 0 || len(cs) > MaxVCards {
			t.Fatalf("%d cards", len(cs))
		}
		for _, c := range cs {
			if c.Email == "" || strings.ContainsAny(c.Email, "\r\n") {
				t.Fatalf("card with address %q", c.Email)
			}
			if _, err := NormalizeTags(c.Tags); err != nil {
				t.Fatalf("card with bad tags %q", c.Tags)
			}
		}
	})
}
