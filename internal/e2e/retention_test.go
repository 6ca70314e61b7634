package e2e

import (
	"context"
	"database/sql"
	"net/smtp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/testkit/testapp"
)

// TestRetentionPurgesWhatIsOld: past MAILROOM_RETAIN_* the hourly pass
// empties old emails' bodies (inline and stored apart), drops their events
// and the raw copy (and so the attachments) of old received mail, while
// every email keeps its status and every message its text; anything newer,
// and anything not yet final, stays whole.
func TestRetentionPurgesWhatIsOld(t *testing.T) {
	c := clock.NewFake(time.Now())
	a := testapp.Start(t, testapp.WithClock(c), testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"),
		testapp.WithEnv("MAILROOM_RETAIN_BODIES", "30d"), testapp.WithEnv("MAILROOM_RETAIN_EVENTS", "60d"),
		testapp.WithEnv("MAILROOM_RETAIN_RECEIVED", "45d"))
	dom := a.Env["MAILROOM_SERVICE_DOMAIN"]
	send := func(html string) string {
		r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@" + dom, "to": []string{"delivered@" + dom}, "subject": "s", "html": html})
		if r.Status != 200 {
			t.Fatalf("send: %d %s", r.Status, r.Body)
		}
		id := r.JSON()["id"].(string)
		testapp.Eventually(t, 10*time.Second, func() bool { return a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"] == "delivered" }, "%s not delivered", id)
		return id
	}
	small := send("<p>small</p>")
	big := send("<p>" + strings.Repeat("big body ", 400) + "</p>")

	var list struct{ Mailboxes []struct{ Address string } }
	a.Do("GET", "/v1/mailboxes", nil).Decode(t, &list)
	inbox := list.Mailboxes[0].Address
	raw := "From: ann@corp.example\r\nTo: " + inbox + "\r\nSubject: keep me\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nthe words\r\n--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=f.pdf\r\n\r\npdf\r\n--b--\r\n"
	if err := smtp.SendMail(a.SMTPAddr(), nil, "ann@corp.example", []string{inbox}, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	var msgs struct{ Messages []struct{ ID string } }
	testapp.Eventually(t, 10*time.Second, func() bool {
		a.Do("GET", "/v1/messages", nil).Decode(t, &msgs)
		return len(msgs.Messages) > 0
	}, "no message received")
	msg := msgs.Messages[0].ID
	if r := a.Do("GET", "/v1/messages/"+msg+"/attachments/f.pdf", nil); r.Status != 200 {
		t.Fatalf("attachment before the purge: %d", r.Status)
	}

	// 31 days on: bodies go, events (60d) and received mail (45d) stay.
	c.Advance(31 * 24 * time.Hour)
	fresh := send("<p>fresh</p>")
	got, err := a.PurgeNow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got["bodies"] != 2 || got["events"] != 0 || got["received"] != 0 {
		t.Fatalf("first pass removed %v, want 2 bodies only", got)
	}
	// The API never reads a body back, so the store says what is left.
	body := func(id string) string {
		var html sql.NullString
		if err := a.DB.QueryRow(context.Background(), `SELECT COALESCE(b.html, e.html) FROM emails e LEFT JOIN email_bodies b ON b.email_id = e.id WHERE e.id = ?`, id).Scan(&html); err != nil {
			t.Fatal(err)
		}
		return html.String
	}
	for _, id := range []string{small, big} {
		e := a.Do("GET", "/v1/emails/"+id, nil).JSON()
		if e["status"] != "delivered" || e["subject"] != "s" || body(id) != "" {
			t.Fatalf("old email %s after the purge: %v, body %q", id, e, body(id))
		}
	}
	if body(fresh) != "<p>fresh</p>" {
		t.Fatalf("fresh email lost its body: %q", body(fresh))
	}

	// 31 more days: the old emails' events and the received raw go.
	c.Advance(31 * 24 * time.Hour)
	if got, err = a.PurgeNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got["events"] < 2 || got["received"] != 1 || got["bodies"] != 1 {
		t.Fatalf("second pass removed %v", got)
	}
	e := a.Do("GET", "/v1/emails/"+small, nil).JSON()
	if evs, _ := e["events"].([]any); len(evs) != 1 || e["status"] != "delivered" {
		t.Fatalf("old email keeps only its derived accepted entry: %v", e)
	}
	m := a.Do("GET", "/v1/messages/"+msg, nil)
	if m.Status != 200 || !strings.Contains(string(m.Body), "the words") {
		t.Fatalf("message after the purge: %d %s", m.Status, m.Body)
	}
	if r := a.Do("GET", "/v1/messages/"+msg+"/attachments/f.pdf", nil); r.Status != 404 {
		t.Fatalf("attachment after the raw purge: %d", r.Status)
	}
	if got, err = a.PurgeNow(context.Background()); err != nil || got["bodies"]+got["events"]+got["received"] != 0 {
		t.Fatalf("a third pass found more: %v %v", got, err)
	}
	if v := scrape(t, a)[`mailroom_retention_purged_total{kind="bodies"}`]; v != 3 {
		t.Fatalf("purged bodies metric %v", v)
	}
}
