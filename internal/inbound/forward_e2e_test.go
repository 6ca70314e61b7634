package inbound_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestReplyAllAndForward: reply-all addresses the sender and the other
// recipients without the mailbox's own address and threads; forward quotes
// inline or wraps the received original as message/rfc822, and its sent
// copy stays in the conversation (by the subject rule: "Fwd: Plans").
func TestReplyAllAndForward(t *testing.T) {
	a, inbox := startSMTP(t)
	_, host, _ := strings.Cut(inbox, "@")
	plus := "inbox+sales@" + host
	raw := "From: Ann <delivered+ann@mailroom.test>\r\nTo: " + plus + ", delivered+bob@mailroom.test\r\nCc: delivered+carol@mailroom.test, " + inbox + "\r\n" +
		"Subject: Plans\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <p1@mailroom.test>\r\n\r\nLet us meet on Friday.\r\n"
	if err := send(t, a.SMTPAddr(), "delivered+ann@mailroom.test", []string{inbox}, raw); err != nil {
		t.Fatal(err)
	}
	s := scenario.New(a)
	s.Run(t,
		sc{Name: "received", Method: "GET", Path: "/v1/messages", Status: 200, Save: map[string]string{"orig": "messages.0.id", "thread": "messages.0.thread_id"}},
		sc{Name: "reply-all", Method: "POST", Path: "/v1/messages/{orig}/reply-all", Status: 200, Body: map[string]any{"body": "Friday works."},
			Shape: shape{"thread_id": scenario.Var("thread")}, Save: map[string]string{"reply": "id"}},
		sc{Name: "addressed without our own address", Method: "GET", Path: "/v1/messages/{reply}", Status: 200,
			Shape: shape{"subject": "Re: Plans", "to": []any{"delivered+ann@mailroom.test"}, "cc": []any{"delivered+bob@mailroom.test", "delivered+carol@mailroom.test"},
				"in_reply_to": "p1@mailroom.test", "direction": "sent"}},
		sc{Name: "reply-all needs a body", Method: "POST", Path: "/v1/messages/{orig}/reply-all", Status: 422, Code: "invalid_request", Body: map[string]any{}},
		sc{Name: "reply-all unknown", Method: "POST", Path: "/v1/messages/msg_nope/reply-all", Status: 404, Code: "not_found", Body: map[string]any{"body": "x"}},
		sc{Name: "forward inline", Method: "POST", Path: "/v1/messages/{orig}/forward", Status: 200,
			Body: map[string]any{"to": []any{"delivered+dave@mailroom.test"}, "body": "FYI"}, Shape: shape{"thread_id": scenario.Var("thread")}, Save: map[string]string{"fwd": "id"}},
		sc{Name: "quotes the original", Method: "GET", Path: "/v1/messages/{fwd}", Status: 200, Shape: shape{"subject": "Fwd: Plans", "to": []any{"delivered+dave@mailroom.test"}},
			Check: func(t testing.TB, r *testapp.Response) {
				m := r.JSON()
				if txt, _ := m["text"].(string); !strings.Contains(txt, "FYI") || !strings.Contains(txt, "> Let us meet on Friday.") || !strings.Contains(txt, "Forwarded message") {
					t.Errorf("inline text %q", txt)
				}
				if html, _ := m["html"].(string); !strings.Contains(html, "<blockquote>") || !strings.Contains(html, "delivered+ann@mailroom.test") {
					t.Errorf("inline html %q", html)
				}
			}},
		sc{Name: "forward wrapped", Method: "POST", Path: "/v1/messages/{orig}/forward", Status: 200,
			Body: map[string]any{"to": []any{"delivered+dave@mailroom.test"}, "mode": "wrapped"}, Save: map[string]string{"wrapped": "id"}},
		sc{Name: "attaches the original", Method: "GET", Path: "/v1/messages/{wrapped}", Status: 200,
			Shape: shape{"attachments": []any{shape{"filename": "forwarded.eml", "content_type": "message/rfc822"}}}},
		sc{Name: "wrapped needs received mail", Method: "POST", Path: "/v1/messages/{reply}/forward", Status: 422, Code: "not_received",
			Body: map[string]any{"to": []any{"delivered@mailroom.test"}, "mode": "wrapped"}},
		sc{Name: "a sent message forwards inline", Method: "POST", Path: "/v1/messages/{reply}/forward", Status: 200,
			Body: map[string]any{"to": []any{"delivered@mailroom.test"}}},
		sc{Name: "bad mode", Method: "POST", Path: "/v1/messages/{orig}/forward", Status: 422, Code: "invalid_request",
			Body: map[string]any{"to": []any{"delivered@mailroom.test"}, "mode": "sideways"}},
		sc{Name: "forward needs to", Method: "POST", Path: "/v1/messages/{orig}/forward", Status: 422, Code: "invalid_request", Body: map[string]any{}},
	)
}

// TestInlineForwardTextPart: the text part of an inline forward quotes the
// original's headers as they are, without the markdown escapes its html
// source needs (no `\<addr\>`); the delivered message, read by Python's
// email parser, shows them so, and its html part the address too.
func TestInlineForwardTextPart(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	dns.AddMX("example.com", "mx.rcpt.example", 10) // the owner's address, which the sandbox mailbox reaches
	a, inbox := startSMTP(t, testapp.WithMX(dns, sink))
	raw := "From: Ann Example <ann_smith@rcpt.example>\r\nTo: " + inbox + "\r\nSubject: Plans *soon*\r\n" +
		"Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <p2@rcpt.example>\r\n\r\nLet us meet on Friday.\r\n"
	if err := send(t, a.SMTPAddr(), "ann_smith@rcpt.example", []string{inbox}, raw); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Messages []struct{ ID string } `json:"messages"`
	}
	a.Do("GET", "/v1/messages", nil).Decode(t, &list)
	if r := a.Do("POST", "/v1/messages/"+list.Messages[0].ID+"/forward", map[string]any{"to": []string{"owner@example.com"}, "body": "FYI"}); r.Status != 200 {
		t.Fatalf("forward: %d %s", r.Status, r.Body)
	}
	msgs := sink.WaitFor(1, 15*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-c", `import email, json, sys
from email import policy
m = email.message_from_bytes(sys.stdin.buffer.read(), policy=policy.default)
print(json.dumps({"text": m.get_body(("plain",)).get_content(), "html": m.get_body(("html",)).get_content(),
    "defects": [type(d).__name__ for p in m.walk() for d in p.defects]}))`)
	cmd.Stdin = bytes.NewReader(msgs[0].Data)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v %s", err, out)
	}
	var got struct {
		Text, HTML string
		Defects    []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python3 said %s", out)
	}
	got.Text = strings.ReplaceAll(got.Text, "\r\n", "\n")
	for _, want := range []string{"FYI", "From: Ann Example <ann_smith@rcpt.example>\n", "Subject: Plans *soon*\n", "> Let us meet on Friday."} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("text part lacks %q:\n%s", want, got.Text)
		}
	}
	if strings.Contains(got.Text, `\`) || len(got.Defects) > 0 {
		t.Errorf("text part has an escape, or defects %v:\n%s", got.Defects, got.Text)
	}
	if !strings.Contains(got.HTML, "Ann Example &lt;ann_smith@rcpt.example&gt;") || !strings.Contains(got.HTML, "Plans *soon*") {
		t.Errorf("html part:\n%s", got.HTML)
	}
}
