package delivery_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestHangingServerIsCutOffAndHeld (#39 item 5): a receiving server that
// hangs after DATA is cut off by MAILROOM_OUTBOUND_COMMAND_TIMEOUT, not by
// the job's timeout; its domain is held back (a second email to it opens
// no session) while mail to another domain is delivered at once.
func TestHangingServerIsCutOffAndHeld(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	hang := smtpsink.StartHanging(t, "127.0.0.2:"+strconv.Itoa(sink.Port()))
	dns.AddMX("hang.example", "mx.hang.example", 10)
	dns.AddA("mx.hang.example", "127.0.0.2")
	a := testapp.Start(t, testapp.WithMX(dns, sink), testapp.WithEnv("MAILROOM_OUTBOUND_COMMAND_TIMEOUT", "1s"))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	send := func(to string) string {
		t.Helper()
		r := a.Do("POST", "/v1/emails", map[string]any{"from": "news@acme.example", "to": to, "subject": "Hi", "text": "hello"})
		if r.Status != 200 {
			t.Fatalf("send to %s: %d %s", to, r.Status, r.Body)
		}
		return r.JSON()["id"].(string)
	}
	began := time.Now()
	send("ann@hang.example")
	testapp.Eventually(t, 15*time.Second, func() bool { return hang.Sessions() == 1 }, "the hanging server was never reached")
	ok := send("bob@rcpt.example")
	testapp.Eventually(t, 10*time.Second, func() bool {
		return a.Do("GET", "/v1/emails/"+ok, nil).JSON()["status"] == "delivered"
	}, "mail to a healthy domain waited behind the hanging one")
	scrape := func() string {
		resp, err := http.Get(a.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	testapp.Eventually(t, 15*time.Second, func() bool {
		return strings.Contains(scrape(), `mailroom_delivery_destination_holds_total{reason="timeout"} 1`)
	}, "the hanging domain was never held back")
	if took := time.Since(began); took > 20*time.Second {
		t.Fatalf("cut off after %v", took)
	}
	// Held: another email to it waits, opening no session. Its deliver job
	// runs at once and, finding the domain held, snoozes until the hold
	// ends: once the job is scheduled the decision was made, and the
	// hanging server saw the first session and nothing else.
	cy := send("cy@hang.example")
	testapp.Eventually(t, 15*time.Second, func() bool {
		var n int
		if err := a.DB.QueryRow(t.Context(), `SELECT count(*) FROM river_job WHERE kind = 'deliver' AND state = 'scheduled' AND CAST(args AS TEXT) LIKE ?`,
			"%"+cy+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}, "the email to the held domain was never put off")
	if n := hang.Sessions(); n != 1 {
		t.Fatalf("%d sessions to a held domain", n)
	}
}
