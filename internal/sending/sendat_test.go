package sending

import (
	"net/http"
	"testing"
	"time"

	"mailroom/internal/apierr"
)

func TestParseSendAt(t *testing.T) {
	t.Parallel()
	// A Monday mid-morning UTC with a sub-millisecond part, so truncation shows.
	now := time.Date(2026, 11, 23, 10, 15, 30, 123456789, time.UTC)
	at := func(y int, mo time.Month, d, h, mi, s, ms int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ms*int(time.Millisecond), time.UTC)
	}
	tests := []struct {
		in   string
		want time.Time
		code string // "" means success
	}{
		// ISO 8601 / RFC 3339
		{in: "2026-11-24T09:00:00Z", want: at(2026, 11, 24, 9, 0, 0, 0)},
		{in: "2026-11-24t09:00:00z", want: at(2026, 11, 24, 9, 0, 0, 0)},
		{in: "2026-11-24T09:00:00.987654Z", want: at(2026, 11, 24, 9, 0, 0, 987)},
		{in: "2026-11-24T09:00:00+02:00", want: at(2026, 11, 24, 7, 0, 0, 0)},
		{in: "2026-11-24T09:00:00-0500", want: at(2026, 11, 24, 14, 0, 0, 0)},
		{in: "2026-11-23T10:00:00", code: "send_at_in_past"},
		{in: "2026-11-23T11:00:00", want: at(2026, 11, 23, 11, 0, 0, 0)},
		{in: "2026-11-23T11:00", want: at(2026, 11, 23, 11, 0, 0, 0)},
		{in: "2026-11-23 11:00", want: at(2026, 11, 23, 11, 0, 0, 0)},
		{in: "2026-11-23 11:00:05.5", want: at(2026, 11, 23, 11, 0, 5, 500)},
		{in: "2026-11-25", want: at(2026, 11, 25, 0, 0, 0, 0)},
		{in: "2026-12-23T10:15:30.123Z", want: at(2026, 12, 23, 10, 15, 30, 123)}, // exactly 30 days
		{in: "2026-12-23T10:15:30.124Z", code: "send_at_too_far"},
		{in: "2027-01-01T00:00:00Z", code: "send_at_too_far"},
		{in: "2020-01-01T00:00:00Z", code: "send_at_in_past"},
		{in: "2026-11-23T10:15:30.123Z", code: "send_at_in_past"}, // now, after truncation: not strictly after
		{in: "2026-11-23T10:15:30.123999Z", code: "send_at_in_past"},
		{in: "2026-13-01T00:00:00Z", code: "send_at_invalid"},
		{in: "2026-11-24T25:00:00Z", code: "send_at_invalid"},
		// relative
		{in: "in 1 min", want: at(2026, 11, 23, 10, 16, 30, 123)},
		{in: "IN 1 MIN", want: at(2026, 11, 23, 10, 16, 30, 123)},
		{in: "  in   30    minutes ", want: at(2026, 11, 23, 10, 45, 30, 123)},
		{in: "in 45s", want: at(2026, 11, 23, 10, 16, 15, 123)},
		{in: "in 10 seconds", want: at(2026, 11, 23, 10, 15, 40, 123)},
		{in: "in 2 hours", want: at(2026, 11, 23, 12, 15, 30, 123)},
		{in: "in 2 hrs", want: at(2026, 11, 23, 12, 15, 30, 123)},
		{in: "in 1 h", want: at(2026, 11, 23, 11, 15, 30, 123)},
		{in: "in an hour", want: at(2026, 11, 23, 11, 15, 30, 123)},
		{in: "in a day", want: at(2026, 11, 24, 10, 15, 30, 123)},
		{in: "in 3 days", want: at(2026, 11, 26, 10, 15, 30, 123)},
		{in: "in 1 week", want: at(2026, 11, 30, 10, 15, 30, 123)},
		{in: "in 2w", want: at(2026, 12, 7, 10, 15, 30, 123)},
		{in: "in 30 days", want: at(2026, 12, 23, 10, 15, 30, 123)},
		{in: "in 31 days", code: "send_at_too_far"},
		{in: "in 5 weeks", code: "send_at_too_far"},
		{in: "in 999999999 weeks", code: "send_at_too_far"},
		{in: "in 0 minutes", code: "send_at_in_past"},
		{in: "in 3 fortnights", code: "send_at_invalid"},
		{in: "in minutes", code: "send_at_invalid"},
		{in: "in -5 minutes", code: "send_at_invalid"},
		// clock phrases (UTC)
		{in: "tomorrow at 9am", want: at(2026, 11, 24, 9, 0, 0, 0)},
		{in: "Tomorrow At 9AM", want: at(2026, 11, 24, 9, 0, 0, 0)},
		{in: "tomorrow 9am", want: at(2026, 11, 24, 9, 0, 0, 0)},
		{in: "tomorrow at 9 am", want: at(2026, 11, 24, 9, 0, 0, 0)},
		{in: "tomorrow at 09:30", want: at(2026, 11, 24, 9, 30, 0, 0)},
		{in: "tomorrow at 12am", want: at(2026, 11, 24, 0, 0, 0, 0)},
		{in: "tomorrow at 12pm", want: at(2026, 11, 24, 12, 0, 0, 0)},
		{in: "tomorrow at 11:45pm", want: at(2026, 11, 24, 23, 45, 0, 0)},
		{in: "today at 5pm", want: at(2026, 11, 23, 17, 0, 0, 0)},
		{in: "today at 9am", code: "send_at_in_past"},
		{in: "at 17:30", want: at(2026, 11, 23, 17, 30, 0, 0)},
		{in: "at 9:00", want: at(2026, 11, 24, 9, 0, 0, 0)}, // already past today: next occurrence
		{in: "at 10:15", want: at(2026, 11, 24, 10, 15, 0, 0)},
		{in: "at 10:16", want: at(2026, 11, 23, 10, 16, 0, 0)},
		{in: "17:30", want: at(2026, 11, 23, 17, 30, 0, 0)},
		{in: "9am", want: at(2026, 11, 24, 9, 0, 0, 0)},
		{in: "at 9", want: at(2026, 11, 24, 9, 0, 0, 0)},
		{in: "9", code: "send_at_invalid"},
		{in: "tomorrow", code: "send_at_invalid"},
		{in: "tomorrow at 13pm", code: "send_at_invalid"},
		{in: "tomorrow at 0am", code: "send_at_invalid"},
		{in: "tomorrow at 24:00", code: "send_at_invalid"},
		{in: "tomorrow at 9:60", code: "send_at_invalid"},
		{in: "next tuesday", code: "send_at_invalid"},
		{in: "", code: "send_at_invalid"},
		{in: "   ", code: "send_at_invalid"},
		{in: "soon", code: "send_at_invalid"},
		{in: "1732357200", code: "send_at_invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSendAt(tt.in, now)
			if tt.code != "" {
				e, ok := apierr.As(err)
				if !ok || e.Code != tt.code || e.Status != http.StatusBadRequest {
					t.Fatalf("ParseSendAt(%q) = %v, %v; want %s", tt.in, got, err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSendAt(%q): %v", tt.in, err)
			}
			if !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Fatalf("ParseSendAt(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseSendAtNextDayRollsMonth(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)
	got, err := ParseSendAt("tomorrow at 9am", now)
	if err != nil || !got.Equal(time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("got %v, %v", got, err)
	}
	// A now in another zone is read as the same instant, phrases in UTC.
	local := time.FixedZone("X", 5*3600)
	got, err = ParseSendAt("at 23:30", now.In(local))
	if err != nil || !got.Equal(time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC)) {
		t.Fatalf("got %v, %v", got, err)
	}
}
