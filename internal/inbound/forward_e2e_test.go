package inbound_test

import (
	"strings"
	"testing"

	"mailroom/internal/testkit/scenario"
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
		sc{Name: "reply-all needs a body", Method: "POST", Path: "/v1/messages/{orig}/reply-all", Status: 400, Code: "invalid_request", Body: map[string]any{}},
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
		sc{Name: "bad mode", Method: "POST", Path: "/v1/messages/{orig}/forward", Status: 400, Code: "invalid_request",
			Body: map[string]any{"to": []any{"delivered@mailroom.test"}, "mode": "sideways"}},
		sc{Name: "forward needs to", Method: "POST", Path: "/v1/messages/{orig}/forward", Status: 400, Code: "invalid_request", Body: map[string]any{}},
	)
}
