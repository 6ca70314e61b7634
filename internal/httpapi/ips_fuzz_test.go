package httpapi

import (
	"encoding/json"
	"testing"

	"mailroom/internal/apierr"
	"mailroom/internal/policy"
)

// FuzzParseCap: daily_cap from a PATCH body is a whole number from 0 to
// policy.MaxDailyCap or a 400 invalid_request; never a panic.
func FuzzParseCap(f *testing.F) {
	for _, s := range []string{"0", "20", "-1", "1.5", "1e12", `"5"`, "true", "{}", "[]", "10000000", "10000001", "1e3", "00", " 7 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseCap(json.RawMessage(s))
		if err != nil {
			if e, ok := apierr.As(err); !ok || e.Code != "invalid_request" {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if n < 0 || n > policy.MaxDailyCap {
			t.Fatalf("%q: %d out of range", s, n)
		}
	})
}
