package policy_test

import (
	"fmt"
	"testing"
	"time"

	"mailroom/internal/clock"
)

// TestVelocitySpike: after a minimum volume in the trailing hour, a minute
// far above the hour's average is refused with velocity_spike until the
// next minute.
func TestVelocitySpike(t *testing.T) {
	c := clock.NewFake(noon)
	a := start(t, c, "MAILROOM_VELOCITY_FACTOR", "3", "MAILROOM_VELOCITY_MIN_SENDS", "30")
	// A fresh workspace may burst: below the minimum volume the rule is idle.
	for i := range 10 {
		want(t, a.Do("POST", "/v1/emails", mail(fmt.Sprintf("burst%d@example.org", i))), 200, "")
	}
	// Then 1 a minute for the next 50 minutes: 60 in the trailing hour.
	for i := range 50 {
		c.Advance(time.Minute)
		want(t, a.Do("POST", "/v1/emails", mail(fmt.Sprintf("steady%d@example.org", i))), 200, "")
	}
	c.Advance(time.Minute)
	// Average 1 a minute, factor 3: the fourth this minute is refused.
	for i := range 3 {
		want(t, a.Do("POST", "/v1/emails", mail(fmt.Sprintf("now%d@example.org", i))), 200, "")
	}
	r := a.Do("POST", "/v1/emails", mail("spike@example.org"))
	e := errObj(t, want(t, r, 429, "velocity_spike"))
	if r.Header.Get("Retry-After") == "" || e["resets_at"] == nil {
		t.Fatalf("no reset: %v %v", r.Header, e)
	}
	// Test sends are never throttled.
	want(t, a.Do("POST", "/v1/emails", mail(delivered)), 200, "")
	c.Advance(time.Minute)
	want(t, a.Do("POST", "/v1/emails", mail("next-minute@example.org")), 200, "")
}

// TestDuplicateContentBurst: one body reaches at most the configured number
// of distinct recipients a day; repeats to the same recipient are not new;
// transactional sends with html are exempt, marketing ones (List-Unsubscribe)
// are not.
func TestDuplicateContentBurst(t *testing.T) {
	c := clock.NewFake(noon)
	a := start(t, c, "MAILROOM_DUPLICATE_BURST", "2")
	text := func(to ...any) map[string]any {
		return map[string]any{"from": from, "to": to, "subject": "Sale", "text": "Everything must go"}
	}
	want(t, a.Do("POST", "/v1/emails", text("a@example.org")), 200, "")
	want(t, a.Do("POST", "/v1/emails", text("b@example.org")), 200, "")
	want(t, a.Do("POST", "/v1/emails", text("a@example.org")), 200, "") // not a new recipient
	r := a.Do("POST", "/v1/emails", text("c@example.org"))
	if e := errObj(t, want(t, r, 429, "duplicate_content_burst")); e["resets_at"] != "2026-11-26T00:00:00Z" {
		t.Fatalf("%v", e)
	}
	// Several recipients in one send count one by one.
	want(t, a.Do("POST", "/v1/emails", map[string]any{"from": from, "to": []string{"x@example.org", "y@example.org", "z@example.org"}, "subject": "s", "text": "Another body"}), 429, "duplicate_content_burst")
	// Another body is another count.
	want(t, a.Do("POST", "/v1/emails", map[string]any{"from": from, "to": "c@example.org", "subject": "Sale", "text": "Something else"}), 200, "")
	// Transactional html: exempt.
	for i := range 4 {
		want(t, a.Do("POST", "/v1/emails", mail(fmt.Sprintf("h%d@example.org", i), "text", "Everything must go")), 200, "")
	}
	// Marketing html (List-Unsubscribe) is counted.
	news := func(to string) map[string]any {
		return mail(to, "headers", map[string]string{"List-Unsubscribe": "<mailto:unsub@acme.test>"})
	}
	want(t, a.Do("POST", "/v1/emails", news("m1@example.org")), 200, "")
	want(t, a.Do("POST", "/v1/emails", news("m2@example.org")), 200, "")
	want(t, a.Do("POST", "/v1/emails", news("m3@example.org")), 429, "duplicate_content_burst")
	// A new UTC day starts the count again.
	c.Set(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC))
	want(t, a.Do("POST", "/v1/emails", text("c@example.org")), 200, "")
}
