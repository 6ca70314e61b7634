package sending_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// eventTime is when the event of type kind in e's timeline happened.
func eventTime(t *testing.T, e map[string]any, kind string) time.Time {
	t.Helper()
	for _, ev := range e["events"].([]any) {
		ev := ev.(map[string]any)
		if ev["type"] == kind {
			at, err := time.Parse(time.RFC3339Nano, ev["at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			return at
		}
	}
	t.Fatalf("no %s in %v", kind, eventTypes(e))
	return time.Time{}
}

// TestScenarioAddresses (#48 item 3) plays each scenario address through
// the real server with a +2s delay: the events in order, the delay
// honoured, the webhooks of softbounce@ in order, and no counter moved.
func TestScenarioAddresses(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_RATE_LIMIT", "100000")) // the test polls
	var mu sync.Mutex
	hooks := map[string][]string{} // email id -> event types, in sequence order
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Event    string `json:"event"`
			Sequence int    `json:"sequence"`
			Data     struct {
				EmailID  string `json:"email_id"`
				TestMode bool   `json:"test_mode"`
			} `json:"data"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &env) == nil && env.Data.TestMode {
			mu.Lock()
			// Deliveries run in parallel; sequence says their order.
			hooks[env.Data.EmailID] = append(hooks[env.Data.EmailID], strconv.Itoa(env.Sequence)+" "+env.Event)
			slices.Sort(hooks[env.Data.EmailID])
			mu.Unlock()
		}
	}))
	defer receiver.Close()
	if r := a.Do("POST", "/v1/webhooks", map[string]any{"url": receiver.URL, "events": []string{"email.sent", "email.delivered", "email.complained"}}); r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	const delay = 2 * time.Second
	for _, tt := range []struct {
		to, first, last  string   // status at once, then at the end
		now, then        []string // events at once, then at the end
		waitFrom, waitTo string   // the delay lies between these events
	}{
		{"softbounce+2s@mailroom.test", "sending", "delivered", []string{"email.accepted", "email.deferred"},
			[]string{"email.accepted", "email.deferred", "email.sent", "email.delivered"}, "email.deferred", "email.sent"},
		{"Deferred+2S@mailroom.test", "sending", "delivered", []string{"email.accepted", "email.deferred"},
			[]string{"email.accepted", "email.deferred", "email.sent", "email.delivered"}, "email.deferred", "email.sent"},
		{"complained+2s@mailroom.test", "delivered", "complained", []string{"email.accepted", "email.sent", "email.delivered"},
			[]string{"email.accepted", "email.sent", "email.delivered", "email.complained"}, "email.delivered", "email.complained"},
	} {
		t.Run(tt.to, func(t *testing.T) {
			id := send(t, a, msg("to", tt.to))
			e := getEmail(t, a, id)
			if e["status"] != tt.first || !slices.Equal(eventTypes(e), tt.now) {
				t.Fatalf("at once: %v %v", e["status"], eventTypes(e))
			}
			e = waitStatus(t, a, id, tt.last, 30*time.Second)
			if got := eventTypes(e); !slices.Equal(got, tt.then) {
				t.Fatalf("events %v, want %v", got, tt.then)
			}
			if gap := eventTime(t, e, tt.waitTo).Sub(eventTime(t, e, tt.waitFrom)); gap < delay-time.Millisecond {
				t.Fatalf("%s came %v after %s, want at least %v", tt.waitTo, gap, tt.waitFrom, delay)
			}
			if strings.HasPrefix(tt.to, "softbounce") {
				want := []string{"2 email.sent", "3 email.delivered"}
				testapp.Eventually(t, 15*time.Second, func() bool {
					mu.Lock()
					defer mu.Unlock()
					return slices.Equal(hooks[id], want)
				}, "softbounce@'s webhooks: %v, want %v", hooks[id], want)
			}
		})
	}

	t.Run("opened and clicked", func(t *testing.T) {
		html := `<p>Hi <a href="https://shop.example/sale">the sale</a></p>`
		for _, tt := range []struct {
			to            string
			opens, clicks float64
		}{{"opened+2s@mailroom.test", 1, 0}, {"clicked+2s@mailroom.test", 1, 1}} {
			id := send(t, a, msg("to", tt.to, "html", html, "track_opens", true, "track_clicks", true))
			e := waitStatus(t, a, id, "delivered", 10*time.Second)
			if e["opens"] != float64(0) || e["clicks"] != float64(0) {
				t.Fatalf("%s engaged at once: %v %v", tt.to, e["opens"], e["clicks"])
			}
			testapp.Eventually(t, 30*time.Second, func() bool {
				e = getEmail(t, a, id)
				return e["opens"] == tt.opens && e["clicks"] == tt.clicks
			}, "%s: opens %v clicks %v", tt.to, e["opens"], e["clicks"])
			if time.Since(eventTime(t, e, "email.delivered")) < delay {
				t.Fatalf("%s engaged before its delay", tt.to)
			}
		}
		// Scheduled, the story starts when the send is due.
		r := a.Do("POST", "/v1/emails", msg("to", "clicked+1s@mailroom.test", "html", html, "track_opens", true, "track_clicks", true,
			"send_at", time.Now().Add(3*time.Second).UTC().Format(time.RFC3339)))
		if r.Status != http.StatusAccepted {
			t.Fatalf("scheduled: %d %s", r.Status, r.Body)
		}
		id := r.JSON()["id"].(string)
		testapp.Eventually(t, 30*time.Second, func() bool { e := getEmail(t, a, id); return e["clicks"] == float64(1) }, "the scheduled clicked@ never clicked")
		// Without tracking, opened@ is only delivered.
		id = send(t, a, msg("to", "opened+1s@mailroom.test", "html", html))
		waitStatus(t, a, id, "delivered", 10*time.Second)
	})

	t.Run("autoreply", func(t *testing.T) {
		boxes := a.Do("GET", "/v1/mailboxes", nil)
		inbox := boxes.JSON()["mailboxes"].([]any)[0].(map[string]any)["address"].(string)
		id := send(t, a, msg("from", inbox, "to", "autoreply+2s@mailroom.test", "subject", "Invoice 7"))
		e := waitStatus(t, a, id, "delivered", 10*time.Second)
		if got := eventTypes(e); !slices.Equal(got, []string{"email.accepted", "email.sent", "email.delivered"}) {
			t.Fatalf("events %v", got)
		}
		var reply map[string]any
		testapp.Eventually(t, 30*time.Second, func() bool {
			for _, m := range a.Do("GET", "/v1/messages", nil).JSON()["messages"].([]any) {
				if m := m.(map[string]any); m["direction"] == "received" && m["subject"] == "Automatic reply: Invoice 7" {
					reply = m
					return true
				}
			}
			return false
		}, "no auto-reply in %s", inbox)
		received, err := time.Parse(time.RFC3339Nano, reply["received_at"].(string))
		if err != nil || received.Sub(eventTime(t, e, "email.delivered")) < delay-time.Second {
			t.Fatalf("auto-reply at %v (%v), delivered at %v", reply["received_at"], err, eventTime(t, e, "email.delivered"))
		}
		if reply["from"] != "autoreply+2s@mailroom.test" || reply["in_reply_to"] != id+"@"+strings.SplitN(inbox, "@", 2)[1] || reply["automated"] != true {
			t.Fatalf("reply %v", reply)
		}
	})

	// No counter moved: no sending metric, and analytics has nothing for the day.
	res, err := a.Client.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(metrics), "\nmailroom_emails_sent_total{") {
		t.Fatalf("no sent series to compare in /metrics:\n%.3000s", metrics)
	}
	for _, line := range strings.Split(string(metrics), "\n") {
		if (strings.HasPrefix(line, "mailroom_emails_") || strings.HasPrefix(line, "mailroom_bounces_")) && !strings.HasSuffix(line, " 0") {
			t.Errorf("a test send moved %s", line)
		}
	}
	day := time.Now().UTC().Format("2006-01-02")
	tot := a.Do("GET", "/v1/analytics?from="+day+"&to="+day, nil).JSON()["totals"].(map[string]any)
	for k, v := range tot {
		if n, ok := v.(float64); ok && n != 0 {
			t.Errorf("analytics totals.%s = %v after test sends only", k, v)
		}
	}
}
