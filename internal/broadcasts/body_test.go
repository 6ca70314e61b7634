package broadcasts_test

import (
	"bytes"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/outbound"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestBodyStoredOnce (#47 item 1): a broadcast's recipients' emails store
// no html, text or List-Unsubscribe, only a reference to their recipient
// row; each message is rendered at delivery with the recipient's own
// fields and links, and a read of the email long after renders the same
// bytes the recipient received (links are made as of the email's
// creation, not of the read).
func TestBodyStoredOnce(t *testing.T) {
	sink := smtpsink.Start(t)
	c := clock.NewFake(time.Now())
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()), testapp.WithClock(c))
	aud := audience(t, a, 3)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "For {{ first_name }}",
		"html": `<p>Hi {{ first_name }} on {{ plan }}</p><p><a href="{{ unsubscribe_url }}">Leave</a></p>`}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	testapp.Eventually(t, 30*time.Second, func() bool { return sink.Count() == 3 }, "the broadcast did not reach its three members")

	var stored, apart int
	if err := a.DB.QueryRow(t.Context(), `SELECT COUNT(*) FROM emails WHERE body_source <> '' AND html IS NULL AND text_body IS NULL AND headers IN ('{}', '')
		AND subject LIKE 'For Name%'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if err := a.DB.QueryRow(t.Context(), `SELECT COUNT(*) FROM email_bodies`).Scan(&apart); err != nil {
		t.Fatal(err)
	}
	if stored != 3 || apart != 0 {
		t.Fatalf("%d of 3 emails stored without a body, %d bodies stored apart (want 0)", stored, apart)
	}

	c.Advance(72 * time.Hour) // a read days later renders what was sent
	seen := map[string]bool{}
	for _, m := range sink.Messages() {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		id, ok := outbound.EmailIDOf(msg.Header.Get("Message-Id"))
		if !ok {
			t.Fatalf("no email id in Message-ID %q", msg.Header.Get("Message-Id"))
		}
		sent := htmlPart(t, m.Data)
		unsub := msg.Header.Get("List-Unsubscribe")
		if !strings.Contains(unsub, "/unsubscribe/") || !strings.Contains(sent, "Leave") {
			t.Fatalf("message without its links: List-Unsubscribe %q, html %s", unsub, sent)
		}
		// The body's link is the header's: one token per recipient.
		link := strings.TrimPrefix(strings.SplitN(unsub, ">", 2)[0], "<")
		if !strings.Contains(sent, strings.ReplaceAll(link, "&", "&amp;")) {
			t.Fatalf("the body's link is not the header's %s:\n%s", link, sent)
		}
		read := mustStatus(t, a.Do(http.MethodGet, "/v1/emails/"+id, nil), 200)
		if read["html"] != sent {
			t.Fatalf("GET /v1/emails/%s renders another body than was sent:\nread %v\nsent %s", id, read["html"], sent)
		}
		to := read["to"].([]any)[0].(string)
		if seen[link] || !strings.Contains(sent, "Hi Name") || !strings.Contains(msg.Header.Get("Subject"), "For Name") {
			t.Fatalf("%s got a message not its own:\n%s", to, m.Data)
		}
		seen[link] = true
	}
}

// TestUnrenderableRecipientSkipped: the fan-out renders only subjects, with
// the template's checks, and still skips the member a required variable is
// missing for, with the reason; the others are delivered.
func TestUnrenderableRecipientSkipped(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 2, map[string]any{"email": "noplan@example.net"})
	tpl := mustStatus(t, a.Do(http.MethodPost, "/v1/templates", map[string]any{"name": "Plans", "subject": "Your plan", "html": "<p>On {{ plan }}</p>",
		"variables": []any{map[string]any{"name": "plan", "required": true}}, "publish": true}), 201)["id"].(string)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "template_id": tpl}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	testapp.Eventually(t, 30*time.Second, func() bool {
		return mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc, nil), 200)["status"] == "sent"
	}, "the broadcast never finished")
	r := mustStatus(t, a.Do(http.MethodGet, "/v1/broadcasts/"+bc+"/recipients?status=skipped", nil), 200)
	rs := r["recipients"].([]any)
	if len(rs) != 1 || !strings.Contains(toJSON(rs[0]), "noplan@example.net") || !strings.Contains(toJSON(rs[0]), "could not render") || !strings.Contains(toJSON(rs[0]), "plan") {
		t.Fatalf("skipped %s, want noplan@example.net for the missing plan", toJSON(rs))
	}
	if n := sink.Count(); n != 2 {
		t.Fatalf("%d messages at the sink, want the 2 members with a plan", n)
	}
	for _, m := range sink.Messages() {
		if body := htmlPart(t, m.Data); !strings.Contains(body, "On p") {
			t.Fatalf("a member's plan missing from the body:\n%s", body)
		}
	}
}

// TestSubjectShowsOwnLink: the fan-out, which renders subjects alone, makes
// a member's links only when the subject names one; when it does, each
// subject carries its recipient's own link, the one in its header.
func TestSubjectShowsOwnLink(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 2)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud,
		"subject": "News (leave: {{ unsubscribe_url }})", "html": "<p>Hi {{ first_name }}</p>"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	testapp.Eventually(t, 30*time.Second, func() bool { return sink.Count() == 2 }, "the broadcast did not reach its two members")
	seen := map[string]bool{}
	for _, m := range sink.Messages() {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		link := strings.TrimPrefix(strings.SplitN(msg.Header.Get("List-Unsubscribe"), ">", 2)[0], "<")
		if !strings.Contains(link, "/unsubscribe/") || !strings.Contains(msg.Header.Get("Subject"), link) || seen[link] {
			t.Fatalf("subject %q does not carry its own link %q", msg.Header.Get("Subject"), link)
		}
		seen[link] = true
	}
}

// TestFooterBytes pins what a recipient of a body without its own
// unsubscribe link receives (#40): the footer, with its own links, right
// before the html's </body> and at the end of the text, byte for byte.
func TestFooterBytes(t *testing.T) {
	sink := smtpsink.Start(t)
	a := start(t, sink)
	aud := audience(t, a, 1)
	bc := mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts", map[string]any{"from": sandbox, "audience_id": aud, "subject": "Hi",
		"html": "<html><body><p>Hi {{ first_name }}</p></body></html>", "text": "Hi {{ first_name }}"}), 201)["id"].(string)
	mustStatus(t, a.Do(http.MethodPost, "/v1/broadcasts/"+bc+"/send", nil), 200)
	h, html, text := smtpsink.Parts(t, sink.WaitFor(1, 30*time.Second)[0].Data)
	unsub := strings.TrimPrefix(strings.SplitN(h.Get("List-Unsubscribe"), ">", 2)[0], "<")
	prefs := regexp.MustCompile(`https?://[^"]*/preferences/[^"]+`).FindString(html)
	if !strings.Contains(unsub, "/unsubscribe/") || prefs == "" {
		t.Fatalf("links missing: List-Unsubscribe %q, html %s", h.Get("List-Unsubscribe"), html)
	}
	wantHTML := `<html><body><p>Hi Name0</p><div class="mailroom-unsubscribe-footer" style="margin-top:24px;font-size:12px;color:#666">` +
		`You receive this because you subscribed. <a href="` + unsub + `">Unsubscribe</a> | <a href="` + prefs + `">Email preferences</a></div></body></html>`
	wantText := "Hi Name0\r\n\r\n--\r\nUnsubscribe: " + unsub + "\r\nEmail preferences: " + prefs + "\r\n"
	if html != wantHTML || text != wantText {
		t.Fatalf("html %q\nwant %q\ntext %q\nwant %q", html, wantHTML, text, wantText)
	}
}
