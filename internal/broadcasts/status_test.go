package broadcasts_test

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/mailauth"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestRecipientStatusFollowsEmail: each recipient's status is its email's
// outcome: delivered, bounced (the server refused the address), failed
// (suppressed after the snapshot, before delivery) and complained (an
// abuse report after delivery).
func TestRecipientStatusFollowsEmail(t *testing.T) {
	gate, arrived := make(chan struct{}), make(chan string, 8)
	sink := smtpsink.Start(t, smtpsink.WithHandler(func(_ string, to []string, _ []byte) error {
		// Every message waits at the sink until the test has suppressed a
		// member whose message is still to go.
		arrived <- to[0]
		<-gate
		return nil
	}))
	// The delivery concurrency of 1 gives the marketing lane one slot: once
	// a message waits at the sink, no other has been taken up.
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()), testapp.WithEnv("MAILROOM_DELIVERY_CONCURRENCY", "1"),
		testapp.WithEnv("MAILROOM_FBL_TRUSTED_IPS", "127.0.0.1")) // the complaint below comes through a relay the operator trusts
	aud := audience(t, a, 3, map[string]any{"email": "reject@example.net"})
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "S", "text": "T"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)

	waiting := map[string]bool{}
	var held string
	for len(waiting) < 1 {
		select {
		case to := <-arrived:
			if held == "" {
				held = to
			}
			waiting[to] = true
		case <-time.After(20 * time.Second):
			t.Fatal("no message reached the sink")
		}
	}
	victim := ""
	for i := range 3 {
		if e := fmt.Sprintf("m%05d@example.net", i); !waiting[e] {
			victim = e
			break
		}
	}
	if victim == "" {
		t.Fatalf("no member left to suppress: waiting %v", waiting)
	}
	mustStatus(t, a.Do(http.MethodPost, "/v1/suppressions", map[string]any{"email": victim}), 201)
	close(gate)

	byEmail := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, r := range mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc+"/recipients", nil), 200)["recipients"].([]any) {
			out[r.(map[string]any)["email"].(string)] = r.(map[string]any)
		}
		return out
	}
	testapp.Eventually(t, 20*time.Second, func() bool {
		st := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["stats"].(map[string]any)
		return st["sent"] == float64(0) && st["pending"] == float64(0)
	}, "recipients never reached a final status")
	rs := byEmail()
	if rs["reject@example.net"]["status"] != "bounced" || rs[victim]["status"] != "failed" || rs[held]["status"] != "delivered" {
		t.Fatalf("statuses after delivery: %v", rs)
	}

	// An abuse report about the held member's message.
	var msgID string
	for _, m := range sink.Messages() {
		if m.To[0] == held {
			msgID = regexp.MustCompile(`(?im)^Message-ID:\s*(<[^>]+>)`).FindStringSubmatch(string(m.Data))[1]
		}
	}
	if err := a.Delivery().HandleReport(t.Context(), "", mailauth.Sender{IP: net.IPv4(127, 0, 0, 1)}, []byte(arf(msgID))); err != nil {
		t.Fatal(err)
	}
	rs = byEmail()
	if rs[held]["status"] != "complained" {
		t.Fatalf("after the complaint: %v", rs[held])
	}
	r := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc+"/recipients?status=complained", nil), 200)
	st := r["stats"].(map[string]any)
	if n := len(r["recipients"].([]any)); n != 1 || st["complained"] != float64(1) || st["bounced"] != float64(1) || st["failed"] != float64(1) || st["delivered"] != float64(1) {
		t.Fatalf("%d complained recipients listed, stats %v", n, st)
	}
}

func arf(messageID string) string {
	return strings.ReplaceAll(`From: staff@feedback.example.org
To: fbl@mailroom.test
Subject: FW: complaint
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="b2"

--b2
Content-Type: text/plain

An abuse report.
--b2
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1
Original-Rcpt-To: <redacted@example.org>

--b2
Content-Type: message/rfc822

From: onboarding@mailroom.test
Message-ID: `+messageID+`
Subject: S

T
--b2--
`, "\n", "\r\n")
}
