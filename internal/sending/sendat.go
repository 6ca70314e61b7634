package sending

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/apierr"
)

// MaxScheduleAhead is the spec's limit on send_at: at most 30 days out.
const MaxScheduleAhead = 30 * 24 * time.Hour

const maxSendAtInput = 100

// isoLayouts are tried in order; those without a zone are read as UTC.
func isoLayouts() []string {
	return []string{
		time.RFC3339Nano, // covers RFC3339 with and without fraction
		"2006-01-02T15:04:05.999999999Z0700",
		"2006-01-02T15:04Z07:00",
		"2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999Z0700",
		"2006-01-02 15:04Z07:00",
		"2006-01-02 15:04:05.999999999",
		"2006-01-02 15:04",
		"2006-01-02",
	}
}

var (
	relativeRe = regexp.MustCompile(`^in\s*(\d{1,9}|an?)\s*([a-z]+)$`)
	clockRe    = regexp.MustCompile(`^(?:(today|tomorrow)\s*)?(?:at\s*)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$`)
	spaceRe    = regexp.MustCompile(`\s+`)
)

// unitOf maps a relative-offset unit word to its length.
func unitOf(w string) (time.Duration, bool) {
	switch w {
	case "s", "sec", "secs", "second", "seconds":
		return time.Second, true
	case "m", "min", "mins", "minute", "minutes":
		return time.Minute, true
	case "h", "hr", "hrs", "hour", "hours":
		return time.Hour, true
	case "d", "day", "days":
		return 24 * time.Hour, true
	case "w", "wk", "wks", "week", "weeks":
		return 7 * 24 * time.Hour, true
	}
	return 0, false
}

// ParseSendAt reads a send_at value and checks it against now: strictly in
// the future and at most 30 days out. It accepts
//
//   - ISO 8601 / RFC 3339: 2026-11-23T10:00:00Z, with fraction or offset; a
//     time without zone (2026-11-23T10:00:00, 2026-11-23 10:00) is UTC;
//   - relative offsets: "in 1 min", "in 30 minutes", "in 2 hours", "in 3
//     days", "in 1 week", "in an hour" (units s/sec/second(s), m/min/minute(s),
//     h/hr/hour(s), d/day(s), w/week(s));
//   - clock phrases, read as UTC: "tomorrow at 9am", "tomorrow 09:30",
//     "today at 5pm", "at 17:30". A bare clock ("at 17:30", "9am") means its
//     next occurrence: today if that is still ahead, otherwise tomorrow.
//
// Phrases are case-insensitive and tolerate extra spaces. The result is UTC,
// truncated to milliseconds. Errors: send_at_invalid, send_at_in_past,
// send_at_too_far (all 400).
func ParseSendAt(s string, now time.Time) (time.Time, error) {
	now = now.UTC()
	t, ok := parseSendAtTime(s, now)
	if !ok {
		return time.Time{}, apierr.BadRequest("send_at_invalid",
			"send_at %q is not a time we can read; use an ISO 8601 timestamp such as 2026-11-23T10:00:00Z, an offset such as \"in 10 minutes\", or a clock time such as \"tomorrow at 9am\" (UTC).", clip(s))
	}
	t = t.UTC().Truncate(time.Millisecond)
	if !t.After(now) {
		return time.Time{}, apierr.BadRequest("send_at_in_past",
			"send_at %s is not in the future (now is %s).", t.Format(time.RFC3339Nano), now.Format(time.RFC3339))
	}
	if t.Sub(now) > MaxScheduleAhead {
		return time.Time{}, apierr.BadRequest("send_at_too_far",
			"send_at %s is more than 30 days from now; the latest allowed is %s.", t.Format(time.RFC3339), now.Add(MaxScheduleAhead).Format(time.RFC3339))
	}
	return t, nil
}

// parseSendAtTime returns the instant s names, or false. Offsets too large to
// represent come back as a time far beyond the limit so that the caller
// answers send_at_too_far rather than send_at_invalid.
func parseSendAtTime(s string, now time.Time) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxSendAtInput {
		return time.Time{}, false
	}
	upper := strings.ToUpper(s)
	for _, layout := range isoLayouts() {
		if t, err := time.Parse(layout, upper); err == nil {
			return t, true
		}
	}
	phrase := spaceRe.ReplaceAllString(strings.ToLower(s), " ")
	if m := relativeRe.FindStringSubmatch(phrase); m != nil {
		unit, ok := unitOf(m[2])
		if !ok {
			return time.Time{}, false
		}
		n := int64(1)
		if m[1] != "a" && m[1] != "an" {
			n, _ = strconv.ParseInt(m[1], 10, 64) // at most 9 digits: cannot fail
		}
		// 9 digits of weeks overflow a Duration; anything past the limit is
		// simply too far.
		if n > int64(MaxScheduleAhead/unit)+1 {
			return now.Add(MaxScheduleAhead + time.Hour), true
		}
		return now.Add(time.Duration(n) * unit), true
	}
	if m := clockRe.FindStringSubmatch(phrase); m != nil {
		day, hh, mm, ampm := m[1], m[2], m[3], m[4]
		if day == "" && !strings.Contains(phrase, "at") && mm == "" && ampm == "" {
			return time.Time{}, false // a bare number such as "9" is not a time
		}
		h, _ := strconv.Atoi(hh)
		minute := 0
		if mm != "" {
			minute, _ = strconv.Atoi(mm)
		}
		if minute > 59 {
			return time.Time{}, false
		}
		switch ampm {
		case "":
			if h > 23 {
				return time.Time{}, false
			}
		default:
			if h < 1 || h > 12 {
				return time.Time{}, false
			}
			h %= 12
			if ampm == "pm" {
				h += 12
			}
		}
		y, mo, d := now.Date()
		t := time.Date(y, mo, d, h, minute, 0, 0, time.UTC)
		switch day {
		case "tomorrow":
			t = t.AddDate(0, 0, 1)
		case "":
			if !t.After(now) {
				t = t.AddDate(0, 0, 1)
			}
		}
		return t, true
	}
	return time.Time{}, false
}

// clip keeps echoed user input short in messages.
func clip(s string) string { return apierr.Clip(s, 64) }
