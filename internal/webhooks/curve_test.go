package webhooks

import (
	"testing"
	"time"
)

func TestRetryCurve(t *testing.T) {
	t.Parallel()
	if got, want := RetryWindow(), 17*time.Hour+35*time.Minute+5*time.Second; got != want {
		t.Fatalf("RetryWindow = %s, want %s", got, want)
	}
	if len(RetryDelays) != MaxAttempts {
		t.Fatalf("%d delays for %d attempts", len(RetryDelays), MaxAttempts)
	}
	// The spec's table: wait before attempt n and elapsed time at attempt n.
	table := []struct {
		attempt       int
		wait, elapsed time.Duration
	}{
		{1, 0, 0},
		{2, 5 * time.Second, 5 * time.Second},
		{3, 5 * time.Minute, 5*time.Minute + 5*time.Second},
		{4, 30 * time.Minute, 35*time.Minute + 5*time.Second},
		{5, 2 * time.Hour, 2*time.Hour + 35*time.Minute + 5*time.Second},
		{6, 5 * time.Hour, 7*time.Hour + 35*time.Minute + 5*time.Second},
		{7, 10 * time.Hour, 17*time.Hour + 35*time.Minute + 5*time.Second},
	}
	var elapsed time.Duration
	for _, row := range table {
		d, ok := NextDelay(row.attempt-1, 0)
		elapsed += d
		if !ok || d != row.wait || elapsed != row.elapsed {
			t.Errorf("attempt %d: wait %s ok=%v elapsed %s; want %s, %s", row.attempt, d, ok, elapsed, row.wait, row.elapsed)
		}
	}
	if _, ok := NextDelay(MaxAttempts, 0); ok {
		t.Fatal("an eighth attempt was scheduled")
	}
}

func TestNextDelayRetryAfter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		made       int
		retryAfter time.Duration
		want       time.Duration
		ok         bool
	}{
		{1, 2 * time.Minute, 2 * time.Minute, true}, // replaces 5 s
		{4, 2 * time.Minute, 2 * time.Minute, true}, // replaces 2 h
		{3, 3 * time.Hour, time.Hour, true},         // capped
		{2, -time.Second, 5 * time.Minute, true},    // ignored
		{7, time.Minute, 0, false},                  // exhausted regardless
		{-1, 0, 0, true},                            // treated as none made
	}
	for _, c := range cases {
		got, ok := NextDelay(c.made, c.retryAfter)
		if got != c.want || ok != c.ok {
			t.Errorf("NextDelay(%d, %s) = %s, %v; want %s, %v", c.made, c.retryAfter, got, ok, c.want, c.ok)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"120", 2 * time.Minute},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"1.5", 0},
		{"12abc", 0},
		{"99999999999999999999999", 24 * time.Hour},
		{"Sat, 01 Mar 2025 12:10:00 GMT", 10 * time.Minute},
		{"Saturday, 01-Mar-25 12:00:30 GMT", 30 * time.Second},
		{"Sat Mar  1 12:01:00 2025", time.Minute},
		{"Sat, 01 Mar 2025 11:00:00 GMT", 0}, // past
		{"Sat, 01 Mar 2099 11:00:00 GMT", 24 * time.Hour},
		{"tomorrow", 0},
	}
	for _, c := range cases {
		if got := ParseRetryAfter(c.in, now); got != c.want {
			t.Errorf("ParseRetryAfter(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestShouldAutoDisable(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		failures int
		silence  time.Duration
		want     bool
	}{
		{20, 18 * time.Hour, true},
		{19, 100 * time.Hour, false}, // both conditions required
		{500, 17 * time.Hour, false},
		{25, 19 * time.Hour, true},
	}
	for _, c := range cases {
		if got := ShouldAutoDisable(c.failures, now.Add(-c.silence), now); got != c.want {
			t.Errorf("ShouldAutoDisable(%d, -%s) = %v, want %v", c.failures, c.silence, got, c.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"120", "", "Sat, 01 Mar 2025 12:10:00 GMT", "-1", "99999999999999999999", "Sat Mar  1 12:01:00 2025", "+5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := ParseRetryAfter(s, now)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("ParseRetryAfter(%q) = %s, outside [0, 24h]", s, d)
		}
		if w, ok := NextDelay(1, d); !ok || w > RetryAfterCap || w < 0 {
			t.Fatalf("NextDelay after %q = %s, %v", s, w, ok)
		}
	})
}
