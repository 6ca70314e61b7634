package delivery_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-smtp"

	"mailroom/internal/sending"
)

// mailIn sends raw to the node's inbound listener over SMTP, as a remote
// MTA returning a report would (null sender).
func (b *bundle) mailIn(t *testing.T, rcpt, raw string) error {
	t.Helper()
	return b.mailInFrom(t, "", rcpt, raw)
}

// mailInFrom is mailIn with the envelope sender from.
func (b *bundle) mailInFrom(t *testing.T, from, rcpt, raw string) error {
	t.Helper()
	c, err := smtp.Dial(b.a.SMTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.example.net"); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail(from, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt(rcpt, nil); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(crlf(raw))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// signFBL signs a report as the tests' feedback-loop operator does, so the
// node believes it.
func (b *bundle) signFBL(t *testing.T, raw string) string {
	t.Helper()
	var out bytes.Buffer
	err := dkim.Sign(&out, strings.NewReader(crlf(raw)), &dkim.SignOptions{Domain: fblDomain, Selector: "fbl", Signer: b.fblKey,
		HeaderKeys: []string{"From", "To", "Subject", "MIME-Version", "Content-Type"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func dsn(rcpt, messageID string) string {
	return `From: MAILER-DAEMON@mx.example.net
To: postmaster
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="b1"

--b1
Content-Type: text/plain

I'm sorry to have to inform you that your message could not be delivered.
--b1
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net

Final-Recipient: rfc822; ` + rcpt + `
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <` + rcpt + `>: Recipient address rejected: User unknown

--b1
Content-Type: text/rfc822-headers

From: news@example.com
Message-ID: ` + messageID + `
Subject: hello

--b1--
`
}

// arf is an abuse report from the tests' feedback-loop operator (signed
// with signFBL to be believed) about messageID, naming rcptTo.
func arfFor(messageID, rcptTo string) string {
	return strings.Replace(arf(messageID), "<redacted@example.org>", "<"+rcptTo+">", 1)
}

func arf(messageID string) string {
	return `From: staff@feedback.example.org
To: fbl@mailroom.test
Subject: FW: complaint
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="b2"

--b2
Content-Type: text/plain

This is an email abuse report for an email message received from IP 192.0.2.1.
--b2
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1
Original-Rcpt-To: <redacted@example.org>

--b2
Content-Type: message/rfc822

From: news@example.com
Message-ID: ` + messageID + `
Subject: hello

Hello.
--b2--
`
}

func TestAsyncBouncesAndComplaints(t *testing.T) {
	b := setup(t)
	bounced := b.insert(t, send{From: "news@example.com", To: []string{"later@example.net"}, Subject: "hello", Text: "x", Tags: map[string]string{"a": "b"}})
	complained := b.insert(t, send{From: "news@example.com", To: []string{"reader@example.org"}, Subject: "hello", Text: "x"})
	b.waitStatus(t, bounced, sending.StatusDelivered)
	r := b.waitStatus(t, complained, sending.StatusDelivered)

	t.Run("other recipients are refused", func(t *testing.T) {
		err := b.mailIn(t, "someone@example.com", "Subject: hi\n\nhi\n")
		var se *smtp.SMTPError
		if !errors.As(err, &se) || se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 1, 1}) {
			t.Fatalf("RCPT answer %v, want 550 5.1.1", err)
		}
	})

	t.Run("DSN to the VERP address bounces the recipient", func(t *testing.T) {
		// The Message-ID names another email: the VERP id wins.
		if err := b.mailIn(t, b.a.VERP().Address(bounced, "example.com"), dsn("later@example.net", "<nope@example.com>")); err != nil {
			t.Fatal(err)
		}
		b.waitStatus(t, bounced, sending.StatusBounced)
		evs := b.timeline(t, bounced)
		last := evs[len(evs)-1]
		if last.Type != "email.bounced" || last.Data["bounce_type"] != "hard" || last.Data["bounce_subtype"] != "mailbox_unavailable" ||
			!strings.Contains(last.Data["diagnostic"].(string), "User unknown") {
			t.Errorf("event %s %v", last.Type, last.Data)
		}
		if tags, _ := last.Data["tags"].(map[string]any); tags["a"] != "b" {
			t.Errorf("tags %v", last.Data["tags"])
		}
		if b.suppression(t, "later@example.net") != "bounce" {
			t.Error("no bounce suppression")
		}
		// The same report again changes nothing.
		if err := b.mailIn(t, b.a.VERP().Address(bounced, "example.com"), dsn("later@example.net", "<nope@example.com>")); err != nil {
			t.Fatal(err)
		}
		if n := len(b.timeline(t, bounced)); n != len(evs) {
			t.Errorf("repeated DSN raised another event (%d events)", n)
		}
	})

	t.Run("an ARF naming the email's id under another domain is dropped", func(t *testing.T) {
		// Reports find their email through the id inside the Message-ID;
		// the stored Message-ID must match all the same.
		forged := strings.Replace(r.MessageID, "@", "@forged.", 1)
		if err := b.mailIn(t, "fbl@mailroom.test", b.signFBL(t, arf(forged))); err != nil {
			t.Fatal(err)
		}
		if evs := b.timeline(t, complained); evs[len(evs)-1].Type == "email.complained" {
			t.Fatalf("a forged Message-ID %s filed a complaint", forged)
		}
	})

	t.Run("ARF to the feedback address is a complaint", func(t *testing.T) {
		if err := b.mailIn(t, "fbl@mailroom.test", b.signFBL(t, arf(r.MessageID))); err != nil {
			t.Fatal(err)
		}
		b.waitStatus(t, complained, sending.StatusComplained)
		evs := b.timeline(t, complained)
		last := evs[len(evs)-1]
		if last.Type != "email.complained" || last.Data["feedback_type"] != "abuse" || last.Sequence != 4 {
			t.Errorf("event %s %v", last.Type, last.Data)
		}
		if to, _ := last.Data["to"].([]any); len(to) != 1 || to[0] != "reader@example.org" {
			t.Errorf("to %v", last.Data["to"])
		}
		if b.suppression(t, "reader@example.org") != "complaint" {
			t.Error("no complaint suppression")
		}
	})

	t.Run("a DSN about an unknown email is accepted and dropped", func(t *testing.T) {
		if err := b.mailIn(t, b.a.VERP().Address("em_unknown", "example.com"), dsn("x@example.net", "<nope@example.com>")); err != nil {
			t.Fatal(err)
		}
	})
}
