package policy_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/testapp"
)

const (
	sandbox   = "onboarding@mailroom.test"
	delivered = "delivered@mailroom.test"
	owner     = "owner@example.com" // testapp's workspace owner: a real recipient the sandbox may reach
	from      = "news@acme.test"    // a verified domain (verified below)
)

// verified stands in for the domains area: acme.test, and the workspace's
// own subdomain (its mailbox sends receive-side mail), are verified on
// every workspace, so sends may reach any recipient.
type verified struct{}

func (verified) SendingStatus(_ context.Context, _, domain string) (string, error) {
	if domain == "acme.test" || strings.HasSuffix(domain, ".mailroom.test") {
		return "verified", nil
	}
	return "", nil
}

// start boots a node whose mail leaves through a closed port (deliveries
// wait for their retry, off the test) with the policy settings in env.
func start(t *testing.T, c clock.Clock, env ...string) *testapp.App {
	t.Helper()
	opts := []testapp.Option{testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://127.0.0.1:1"), testapp.WithEnv("MAILROOM_DELIVERY_CONCURRENCY", "1")}
	if c != nil {
		opts = append(opts, testapp.WithClock(c))
	}
	for i := 0; i+1 < len(env); i += 2 {
		opts = append(opts, testapp.WithEnv(env[i], env[i+1]))
	}
	a := testapp.Start(t, opts...)
	a.Sending().SetDomains(verified{})
	return a
}

func mail(to string, kv ...any) map[string]any {
	m := map[string]any{"from": from, "to": to, "subject": "Hello", "html": "<p>Hi</p>"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func want(t *testing.T, r *testapp.Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status || (code != "" && r.ErrCode() != code) {
		t.Fatalf("status %d (%s), want %d %s: %s", r.Status, r.ErrCode(), status, code, r.Body)
	}
	return r.JSON()
}

// errObj is the nested error object of an answer.
func errObj(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object: %v", m)
	}
	return e
}

var noon = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// TestDailyQuota: the workspace's daily allowance counts real sends only,
// refuses the next one with 429 quota_exhausted telling when it resets
// (Retry-After, resets_at, next), and opens again on the next UTC day.
func TestDailyQuota(t *testing.T) {
	c := clock.NewFake(noon)
	a := start(t, c, "MAILROOM_DAILY_QUOTA", "3")
	for i := range 3 {
		want(t, a.Do("POST", "/v1/emails", mail(fmt.Sprintf("r%d@example.org", i))), 200, "")
	}
	// Test addresses never count, and are never refused by a quota.
	want(t, a.Do("POST", "/v1/emails", mail(delivered)), 200, "")
	r := a.Do("POST", "/v1/emails", mail("late@example.org"))
	e := errObj(t, want(t, r, 429, "quota_exhausted"))
	if e["resets_at"] != "2026-11-26T00:00:00Z" || e["next"] == nil {
		t.Fatalf("error object %v", e)
	}
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra != 12*3600 {
		t.Fatalf("Retry-After %q, want %d", r.Header.Get("Retry-After"), 12*3600)
	}
	if r.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("RateLimit-Remaining %q on a 429", r.Header.Get("RateLimit-Remaining"))
	}
	// Another workspace has its own allowance.
	_, key2 := a.NewWorkspace("Other", "other@example.com")
	want(t, a.DoKey(key2, "POST", "/v1/emails", mail("x@example.org")), 200, "")

	c.Set(time.Date(2026, 11, 26, 0, 0, 1, 0, time.UTC))
	want(t, a.Do("POST", "/v1/emails", mail("tomorrow@example.org")), 200, "")
}

// TestMonthlyQuotaAndAddressCap: the monthly allowance and the per-address
// daily cap, each with its own code; a refused send counts nothing.
func TestMonthlyQuotaAndAddressCap(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC))
	a := start(t, c, "MAILROOM_MONTHLY_QUOTA", "3", "MAILROOM_ADDRESS_DAILY_CAP", "2")
	want(t, a.Do("POST", "/v1/emails", mail("a@example.org")), 200, "")
	want(t, a.Do("POST", "/v1/emails", mail("b@example.org")), 200, "")
	r := a.Do("POST", "/v1/emails", mail("c@example.org"))
	e := errObj(t, want(t, r, 429, "address_daily_cap_reached"))
	if e["resets_at"] != "2026-12-01T00:00:00Z" {
		t.Fatalf("%v", e)
	}
	// Another address of the workspace still sends, up to the monthly quota.
	want(t, a.Do("POST", "/v1/emails", mail("c@example.org", "from", "Billing <billing@acme.test>")), 200, "")
	r = a.Do("POST", "/v1/emails", mail("d@example.org", "from", "billing@acme.test"))
	if e := errObj(t, want(t, r, 429, "quota_exhausted")); e["resets_at"] != "2026-12-01T00:00:00Z" {
		t.Fatalf("%v", e)
	}
	c.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	want(t, a.Do("POST", "/v1/emails", mail("e@example.org")), 200, "")
}

// TestBatchEntriesFailAlone: in a batch, the entries past the quota fail
// with their own error (and resets_at) while the others are sent.
func TestBatchEntriesFailAlone(t *testing.T) {
	a := start(t, clock.NewFake(noon), "MAILROOM_DAILY_QUOTA", "2")
	r := a.Do("POST", "/v1/emails/batch", map[string]any{"emails": []any{mail("a@example.org"), mail("b@example.org"), mail("c@example.org"), mail(delivered)}})
	m := want(t, r, 207, "") // some entries failed
	data := m["data"].([]any)
	var ok, failed int
	for i, d := range data {
		d := d.(map[string]any)
		switch d["status"] {
		case "failed":
			failed++
			e := d["error"].(map[string]any)
			if e["code"] != "quota_exhausted" || e["resets_at"] == nil || d["id"] != nil || i == 3 {
				t.Fatalf("entry %d: %v", i, d)
			}
		default:
			ok++
		}
	}
	if ok != 3 || failed != 1 {
		t.Fatalf("%d sent, %d failed: %s", ok, failed, r.Body)
	}
}

// TestScheduledSendsCheckedTwice: a scheduled send is checked at booking
// for the day it goes, and again (and only then counted) when it goes.
func TestScheduledSendsCheckedTwice(t *testing.T) {
	c := clock.NewFake(noon)
	a := start(t, c, "MAILROOM_DAILY_QUOTA", "1")
	// Booked for later today: checked against today's count (0 of 1).
	later := want(t, a.Do("POST", "/v1/emails", mail("a@example.org", "send_at", "2026-11-25T13:00:00Z")), 202, "")
	// Booking counts nothing: a send now still goes, and uses today up.
	want(t, a.Do("POST", "/v1/emails", mail("b@example.org")), 200, "")
	// Booking for today is now refused; for tomorrow it is fine.
	want(t, a.Do("POST", "/v1/emails", mail("c@example.org", "send_at", "2026-11-25T14:00:00Z")), 429, "quota_exhausted")
	tomorrow := want(t, a.Do("POST", "/v1/emails", mail("d@example.org", "send_at", "2026-11-26T09:00:00Z")), 202, "")

	// At 13:00 the first one is due: today's allowance is used, so it fails.
	c.Set(time.Date(2026, 11, 25, 13, 0, 1, 0, time.UTC))
	id := later["id"].(string)
	testapp.Eventually(t, 5*time.Second, func() bool {
		return a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"] == "failed"
	}, "the due send never failed")
	if le, _ := a.Do("GET", "/v1/emails/"+id, nil).JSON()["last_error"].(string); len(le) < 15 || le[:15] != "quota_exhausted" {
		t.Fatalf("last_error %q", le)
	}
	// Tomorrow's goes, and is counted against tomorrow.
	c.Set(time.Date(2026, 11, 26, 9, 0, 1, 0, time.UTC))
	id = tomorrow["id"].(string)
	testapp.Eventually(t, 5*time.Second, func() bool {
		s := a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"]
		return s != "scheduled"
	}, "tomorrow's send never went")
	if s := a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"]; s == "failed" {
		t.Fatalf("tomorrow's send failed: %s", a.Do("GET", "/v1/emails/"+id, nil).Body)
	}
	want(t, a.Do("POST", "/v1/emails", mail("e@example.org")), 429, "quota_exhausted")
}

// TestCountersSharedByNodes: two nodes on one database enforce one quota:
// each adds its count to the database (Flush) and reads the others'.
func TestCountersSharedByNodes(t *testing.T) {
	a := start(t, nil, "MAILROOM_DAILY_QUOTA", "3")
	want(t, a.Do("POST", "/v1/emails", mail("a@example.org")), 200, "")
	want(t, a.Do("POST", "/v1/emails", mail("b@example.org")), 200, "")
	ctx := context.Background()
	if err := a.Policy().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b := testapp.Start(t, testapp.WithDatabase(a.Env["MAILROOM_DATABASE_URL"]), testapp.WithEnv("MAILROOM_DAILY_QUOTA", "3"),
		testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://127.0.0.1:1"))
	b.Sending().SetDomains(verified{})
	want(t, b.DoKey(a.Key, "POST", "/v1/emails", mail("c@example.org")), 200, "")
	want(t, b.DoKey(a.Key, "POST", "/v1/emails", mail("d@example.org")), 429, "quota_exhausted")
	if err := b.Policy().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The first node learns the third send at its next flush.
	if err := a.Policy().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want(t, a.Do("POST", "/v1/emails", mail("e@example.org")), 429, "quota_exhausted")
	if r := a.Do(http.MethodPost, "/v1/emails", mail(delivered)); r.Status != 200 {
		t.Fatalf("test send refused: %s", r.Body)
	}
}

// TestReceiveSideBookingCheckedAtSendTime (#44 item 4): a receive-side
// send booked with send_at checks only its form at booking, though the
// day's quota is used up; at its time it is checked, refused, and the
// booking's outcome says why. A receive-side send going now is refused
// with 422 and the reason's code, as its row lists.
func TestReceiveSideBookingCheckedAtSendTime(t *testing.T) {
	c := clock.NewFake(noon)
	a := start(t, c, "MAILROOM_DAILY_QUOTA", "1")
	want(t, a.Do("POST", "/v1/emails", mail("a@example.org")), 200, "") // today's one send
	booked := want(t, a.Do("POST", "/v1/messages", map[string]any{"to": []string{"b@example.org"}, "subject": "Later", "body": "Hi",
		"send_at": "2026-11-25T13:00:00Z"}), 202, "")
	id, _ := booked["scheduled_id"].(string)
	if id == "" {
		t.Fatalf("booking: %v", booked)
	}
	want(t, a.Do("POST", "/v1/messages", map[string]any{"to": []string{"c@example.org"}, "subject": "Now", "body": "Hi"}), 422, "quota_exhausted")

	c.Set(time.Date(2026, 11, 25, 13, 0, 1, 0, time.UTC))
	var out map[string]any
	testapp.Eventually(t, 5*time.Second, func() bool {
		out = a.Do("GET", "/v1/messages/scheduled/"+id, nil).JSON()
		return out["status"] == "failed"
	}, "the booking never reached its outcome: %v", out)
	if !strings.Contains(fmt.Sprint(out), "quota_exhausted") {
		t.Errorf("the outcome does not say why: %v", out)
	}
}
