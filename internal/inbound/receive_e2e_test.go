package inbound_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// startSMTP boots a node with the inbound listener and returns it with the
// address of its default mailbox.
func startSMTP(t *testing.T, opts ...testapp.Option) (*testapp.App, string) {
	t.Helper()
	a := testapp.Start(t, append([]testapp.Option{testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0")}, opts...)...)
	var list struct {
		Mailboxes []struct{ ID, Address string }
	}
	a.Do("GET", "/v1/mailboxes", nil).Decode(t, &list)
	return a, list.Mailboxes[0].Address
}

// send delivers raw from mailFrom to rcpts over SMTP; the error is the
// first refusal.
func send(t *testing.T, addr, mailFrom string, rcpts []string, raw string) error {
	t.Helper()
	return sendNoFatal(addr, mailFrom, rcpts, raw)
}

func sendNoFatal(addr, mailFrom string, rcpts []string, raw string) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello("client.example"); err != nil {
		return err
	}
	if err := c.Mail(mailFrom, nil); err != nil {
		return err
	}
	for _, r := range rcpts {
		if err := c.Rcpt(r, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, raw); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

func smtpCode(err error) int {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

const pdf = "%PDF-1.4 pretend\x00\x01\x02 bytes"

func sampleMessage(to, subject, msgID string, extra string) string {
	return "From: Ann Example <ann@sender.example>\r\n" +
		"To: " + to + "\r\n" +
		"Cc: Bob <bob@sender.example>\r\n" +
		"Subject: " + subject + "\r\n" +
		"Date: Tue, 24 Nov 2026 10:00:00 +0000\r\n" +
		"Message-ID: <" + msgID + ">\r\n" +
		extra +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n" +
		"--outer\r\n" +
		"Content-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n" +
		"--alt\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nHello caf=E9 world.\r\nSecond line.\r\n" +
		"--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Hello <b>caf\u00e9</b> <img src=\"cid:logo@x\"></p>\r\n" +
		"--alt--\r\n" +
		"--outer\r\nContent-Type: image/png\r\nContent-ID: <logo@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n" + base64.StdEncoding.EncodeToString([]byte("PNGDATA")) + "\r\n" +
		"--outer\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		base64.StdEncoding.EncodeToString([]byte(pdf)) + "\r\n" +
		"--outer\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\"../../etc/passwd\"\r\n\r\nroot:x\r\n" +
		"--outer--\r\n"
}

func TestReceiveOverSMTP(t *testing.T) {
	a, inbox := startSMTP(t)
	ctx := context.Background()
	_, host, _ := strings.Cut(inbox, "@")

	// Unknown recipients are refused at RCPT; plus-addressing reaches the inbox.
	if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{"nobody@" + host}, "x"); smtpCode(err) != 550 {
		t.Fatalf("unknown recipient: %v", err)
	}
	plus := "inbox+orders@" + host
	if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{plus, inbox}, sampleMessage(plus, "=?utf-8?q?Caf=C3=A9_order?=", "m1@sender.example", "")); err != nil {
		t.Fatalf("send: %v", err)
	}

	s := scenario.New(a)
	s.Run(t,
		sc{Name: "listed once", Method: "GET", Path: "/v1/messages", Status: 200,
			Shape: shape{"messages": []any{shape{"subject": "Café order", "from": "ann@sender.example", "from_name": "Ann Example",
				"to": []any{plus}, "cc": []any{"bob@sender.example"}, "unread": true, "archived": false, "mailbox": inbox,
				"message_id_header": "m1@sender.example", "date": "Tue, 24 Nov 2026 10:00:00 +0000", "snippet": "Hello café world. Second line.",
				"auth": shape{"spf": scenario.Present, "dkim": scenario.Present, "dmarc": scenario.Present}, "automated": false,
				"references": []any{}, "in_reply_to": nil, "list_id": nil,
				"inline_images": []any{shape{"filename": "attachment.png", "content_id": "logo@x", "content_type": "image/png", "size": 7}},
				"attachments": []any{
					shape{"filename": "résumé.pdf", "content_type": "application/pdf", "size": len(pdf), "url": scenario.Present},
					shape{"filename": "passwd", "content_type": "text/plain", "size": 6},
				}}}},
			Save: map[string]string{"msg": "messages.0.id", "thread": "messages.0.thread_id"}},
		sc{Name: "mailbox counts it unread", Method: "GET", Path: "/v1/mailboxes", Status: 200, Shape: shape{"mailboxes": []any{shape{"unread_count": 1}}}},
		sc{Name: "read in full", Method: "GET", Path: "/v1/messages/{msg}", Status: 200,
			Shape: shape{"id": scenario.Var("msg"), "text": "Hello café world.\r\nSecond line.", "html": scenario.Present, "unread": false,
				"headers": shape{"subject": "Café order", "message-id": "<m1@sender.example>"}}},
		sc{Name: "read now", Method: "GET", Path: "/v1/messages?unread_only=true", Status: 200, Shape: shape{"messages": scenario.Len(0)}},
		sc{Name: "attachment", Method: "GET", Path: "/v1/messages/{msg}/attachments/r%C3%A9sum%C3%A9.pdf", Status: 200,
			Check: func(t testing.TB, r *testapp.Response) {
				if string(r.Body) != pdf || r.Header.Get("Content-Type") != "application/pdf" {
					t.Errorf("attachment: %q %q", r.Header.Get("Content-Type"), r.Body)
				}
			}},
		sc{Name: "inline image", Method: "GET", Path: "/v1/messages/{msg}/attachments/attachment.png", Status: 200},
		sc{Name: "no such attachment", Method: "GET", Path: "/v1/messages/{msg}/attachments/nope.pdf", Status: 404, Code: "not_found"},
		sc{Name: "path in a name is no path", Method: "GET", Path: "/v1/messages/{msg}/attachments/..%2F..%2Fetc%2Fpasswd", Status: 404, Code: "not_found"},
		sc{Name: "archive", Method: "POST", Path: "/v1/messages/{msg}/archive", Status: 200, Shape: shape{"archived": true, "unread": false}},
		sc{Name: "archived are hidden", Method: "GET", Path: "/v1/messages", Status: 200, Shape: shape{"messages": scenario.Len(0)}},
		sc{Name: "unless asked", Method: "GET", Path: "/v1/messages?include_archived=true", Status: 200, Shape: shape{"messages": scenario.Len(1)}},
		sc{Name: "unread again", Method: "POST", Path: "/v1/messages/{msg}/archive", Body: map[string]any{"unread": true}, Status: 200, Shape: shape{"archived": true, "unread": true}},
		sc{Name: "restore", Method: "POST", Path: "/v1/messages/{msg}/archive", Body: map[string]any{"archived": false}, Status: 200, Shape: shape{"archived": false, "unread": true}},
		sc{Name: "thread", Method: "GET", Path: "/v1/threads/{thread}", Status: 200, Shape: shape{"subject": "Café order", "message_count": 1, "messages": scenario.Len(1)}},
	)

	// The attachments' bytes are stored once, in the raw copy, which the
	// downloads above read them out of.
	var parts, raws int
	if err := a.DB.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM message_parts WHERE message_id = ?), (SELECT COUNT(*) FROM message_raw WHERE message_id = ?)`,
		s.Get("msg"), s.Get("msg")).Scan(&parts, &raws); err != nil || parts != 0 || raws != 1 {
		t.Errorf("stored %d parts and %d raw copies (%v), want 0 and 1", parts, raws, err)
	}

	// The event carries the whole payload, rebuilt from the message when it
	// is read (the log stores a reference).
	ev := receivedEvent(t, a, s.Get("msg"))
	for _, k := range []string{"message_id", "thread_id", "mailbox", "from", "from_name", "to", "cc", "subject", "snippet", "text", "html", "date",
		"message_id_header", "in_reply_to", "references", "list_id", "headers", "spam_verdict", "auth", "automated", "attachments", "inline_images"} {
		if _, ok := ev[k]; !ok {
			t.Errorf("email.received lacks %s: %v", k, ev)
		}
	}
	if _, ok := ev["bcc"]; ok {
		t.Errorf("bcc in the event")
	}
	if u := ev["attachments"].([]any)[0].(map[string]any)["url"].(string); !strings.HasSuffix(u, "/v1/messages/"+s.Get("msg")+"/attachments/r%C3%A9sum%C3%A9.pdf") {
		t.Errorf("url %s", u)
	}

	// A reply threads by In-Reply-To; a reply without headers by subject.
	if err := send(t, a.SMTPAddr(), "bob@sender.example", []string{inbox}, "From: bob@sender.example\r\nSubject: Re: Café order\r\nIn-Reply-To: <m1@sender.example>\r\nMessage-ID: <m2@sender.example>\r\n\r\nreply\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := send(t, a.SMTPAddr(), "bob@sender.example", []string{inbox}, "From: bob@sender.example\r\nSubject: RE: Fwd: café ORDER\r\n\r\nlost headers\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := send(t, a.SMTPAddr(), "bob@sender.example", []string{inbox}, "From: bob@sender.example\r\nSubject: Café order\r\n\r\nnew conversation, same subject\r\n"); err != nil {
		t.Fatal(err)
	}
	s.Run(t,
		sc{Name: "thread grew", Method: "GET", Path: "/v1/threads/{thread}", Status: 200, Shape: shape{"message_count": 3, "messages": scenario.Len(3)}},
		sc{Name: "two threads", Method: "GET", Path: "/v1/threads", Status: 200, Shape: shape{"threads": scenario.Len(2)}},
		sc{Name: "by thread", Method: "GET", Path: "/v1/messages?thread_id={thread}&limit=2", Status: 200, Shape: shape{"messages": scenario.Len(2), "has_more": true}},
	)
}

func TestReceiveLimitsAndOddMail(t *testing.T) {
	a, inbox := startSMTP(t, testapp.WithEnv("MAILROOM_SMTP_MAX_BYTES", "200000"), testapp.WithEnv("MAILROOM_SMTP_MAX_RECIPIENTS", "2"))
	// SIZE is announced and enforced.
	c, err := smtp.Dial(a.SMTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hello("x"); err != nil {
		t.Fatal(err)
	}
	if ok, v := c.Extension("SIZE"); !ok || v != "200000" {
		t.Errorf("SIZE %v %q", ok, v)
	}
	c.Close()
	big := "Subject: big\r\n\r\n" + strings.Repeat("0123456789abcdef\r\n", 15000)
	if err := send(t, a.SMTPAddr(), "a@b.example", []string{inbox}, big); smtpCode(err) != 552 {
		t.Errorf("too large: %v", err)
	}
	if err := send(t, a.SMTPAddr(), "a@b.example", []string{inbox, "inbox+1@" + strings.SplitN(inbox, "@", 2)[1], "inbox+2@" + strings.SplitN(inbox, "@", 2)[1]}, "x"); smtpCode(err) != 452 {
		t.Errorf("too many recipients: %v", err)
	}
	// Odd mail is stored, never refused or crashed on; past msglimit's
	// nesting (50) it is refused 554 before anyone parses it.
	nest := func(n int) string {
		deep := "Subject: deep\r\nContent-Type: multipart/mixed; boundary=b0\r\n\r\n"
		for i := 1; i < n; i++ {
			deep += fmt.Sprintf("--b%d\r\nContent-Type: multipart/mixed; boundary=b%d\r\n\r\n", i-1, i)
		}
		return deep + fmt.Sprintf("--b%d\r\nContent-Type: text/plain\r\n\r\ninner\r\n", n-1)
	}
	if err := send(t, a.SMTPAddr(), "a@b.example", []string{inbox}, nest(100)); smtpCode(err) != 554 {
		t.Errorf("nested 100 deep: %v", err)
	}
	deep := nest(45)
	many := "Subject: many\r\nContent-Type: multipart/mixed; boundary=z\r\n\r\n"
	for i := 0; i < 1000; i++ {
		many += "--z\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"same.bin\"\r\n\r\nx\r\n"
	}
	many += "--z--\r\n"
	for name, raw := range map[string]string{
		"nul":       "Subject: nul\x00here\r\nFrom: a\x00@b.example\r\n\r\nbody\x00with nul\r\n",
		"bare LF":   "Subject: bare\nFrom: a@b.example\n\nline one\nline two\n",
		"bad utf8":  "Subject: \xff\xfe broken\r\nContent-Type: text/plain; charset=x-unknown\r\n\r\n\xff\xfe\r\n",
		"no header": "\r\njust a body\r\n",
		"deep":      deep,
		"many":      many,
		"tnef":      "Subject: tnef\r\nContent-Type: application/ms-tnef; name=winmail.dat\r\n\r\nxx\r\n",
		"uuencode":  "Subject: uu\r\n\r\nbegin 644 file.txt\r\n#86)C\r\n`\r\nend\r\n",
		"nul name":  "Subject: n\r\nContent-Type: text/plain; name=\"a\x00b/../c.txt\"\r\n\r\nx\r\n",
	} {
		if err := send(t, a.SMTPAddr(), "a@b.example", []string{inbox}, raw); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	r := a.Do("GET", "/v1/messages?limit=100", nil)
	var list struct {
		Messages []map[string]any
	}
	r.Decode(t, &list)
	if r.Status != 200 || len(list.Messages) != 9 {
		t.Fatalf("list: %d, %d messages", r.Status, len(list.Messages))
	}
	for _, m := range list.Messages {
		if g := a.Do("GET", "/v1/messages/"+m["id"].(string), nil); g.Status != 200 {
			t.Errorf("read %v: %d %s", m["subject"], g.Status, g.Body)
		}
		if m["subject"] == "many" && len(m["attachments"].([]any)) < 900 {
			t.Errorf("many: %d attachments", len(m["attachments"].([]any)))
		}
	}
	if !bytes.Contains(a.Do("GET", "/v1/messages?limit=100", nil).Body, []byte(`"subject":"nulhere"`)) {
		t.Errorf("NUL not dropped from the subject")
	}
}
