package sending

import (
	"testing"
	"time"

	"mailroom/internal/apierr"
)

func FuzzParseSendAt(f *testing.F) {
	for _, s := range []string{
		"2026-11-24T09:00:00Z", "2026-11-24T09:00:00.5+02:00", "2026-11-23 11:00", "in 1 min", "in 999999999 weeks",
		"tomorrow at 9am", "today at 5pm", "at 17:30", "9am", "in an hour", "", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSendAt(s, testNow)
		if err != nil {
			e, ok := apierr.As(err)
			if !ok || (e.Code != "send_at_invalid" && e.Code != "send_at_in_past" && e.Code != "send_at_too_far") {
				t.Fatalf("ParseSendAt(%q) error %v", s, err)
			}
			return
		}
		if !got.After(testNow) || got.Sub(testNow) > MaxScheduleAhead || got.Location() != time.UTC || got.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("ParseSendAt(%q) = %v breaks the contract", s, got)
		}
	})
}
