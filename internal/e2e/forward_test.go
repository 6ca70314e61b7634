package e2e

import (
	"bytes"
	"context"
	"net/mail"
	"net/smtp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestForwardLeavesFromReceivingMailbox (issue #45 item 2): with two
// mailboxes, mail received by the second and forwarded inline and wrapped
// goes out From the second mailbox, DKIM-signed for its domain, not from
// the workspace's first mailbox.
func TestForwardLeavesFromReceivingMailbox(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink), testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	if r := a.Do("POST", "/v1/mailboxes", map[string]any{"address": "support@acme.example"}); r.Status != 201 {
		t.Fatalf("create mailbox: %d %s", r.Status, r.Body)
	}
	raw := "From: Ann <ann@corp.example>\r\nTo: support@acme.example\r\nSubject: Broken login\r\nMessage-ID: <q1@corp.example>\r\n\r\nI cannot log in.\r\n"
	if err := smtp.SendMail(a.SMTPAddr(), nil, "ann@corp.example", []string{"support@acme.example"}, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Messages []struct{ ID, Mailbox string }
	}
	testapp.Eventually(t, 10*time.Second, func() bool {
		a.Do("GET", "/v1/messages", nil).Decode(t, &list)
		return len(list.Messages) == 1
	}, "the message never arrived")
	orig := list.Messages[0].ID
	for _, mode := range []string{"inline", "wrapped"} {
		r := a.Do("POST", "/v1/messages/"+orig+"/forward", map[string]any{"to": []string{"dev-" + mode + "@rcpt.example"}, "mode": mode})
		if r.Status != 200 {
			t.Fatalf("forward %s: %d %s", mode, r.Status, r.Body)
		}
	}
	msgs := sink.WaitFor(2, 15*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	resolver := dnsresolve.New(dns.Addr())
	for _, m := range msgs {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		from, err := mail.ParseAddress(msg.Header.Get("From"))
		if err != nil || from.Address != "support@acme.example" {
			t.Errorf("forward to %v left From %q, want support@acme.example", m.To, msg.Header.Get("From"))
		}
		if !strings.HasSuffix(m.From, "acme.example") {
			t.Errorf("forward to %v has envelope sender %q, want one at acme.example", m.To, m.From)
		}
		verifs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{
			LookupTXT: func(name string) ([]string, error) { return resolver.LookupTXT(context.Background(), name) },
		})
		if err != nil || len(verifs) != 1 || verifs[0].Err != nil || verifs[0].Domain != "acme.example" {
			t.Errorf("DKIM of the forward to %v: %v %+v", m.To, err, verifs)
		}
	}
}
