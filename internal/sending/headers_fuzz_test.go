package sending

import (
	"strings"
	"testing"

	"mailroom/internal/apierr"
)

func FuzzValidateHeaders(f *testing.F) {
	f.Add("X-Campaign", "fall")
	f.Add("Subject", "x")
	f.Add("X A", "x")
	f.Add("X-A", "a\r\nBcc: b@c.d")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, name, value string) {
		err := ValidateHeaders(map[string]string{name: value})
		if err != nil {
			if _, ok := apierr.As(err); !ok {
				t.Fatalf("error %v", err)
			}
			return
		}
		if isReservedHeader(name) || !isFieldName(name) || strings.ContainsAny(value, "\r\n\x00") || len(value) > MaxHeaderValueLen {
			t.Fatalf("accepted %q: %q", name, value)
		}
	})
}
