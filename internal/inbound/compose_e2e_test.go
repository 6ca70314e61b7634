package inbound_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/scenario"
)

// TestComposeAndReply: POST /v1/messages sends as the mailbox through the
// sending service; a reply carries In-Reply-To/References, joins the
// thread of the message it answers and goes out from that message's
// mailbox; bad input answers the spec's errors; a refused send answers 422
// with its reason; send_at books (202), checking nothing until its time.
func TestComposeAndReply(t *testing.T) {
	a, inbox := startSMTP(t)
	_, host, _ := strings.Cut(inbox, "@")
	if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{inbox}, sampleMessage(inbox, "Question", "q1@sender.example", "References: <r0@sender.example>\r\n")); err != nil {
		t.Fatal(err)
	}
	to := []any{"delivered@mailroom.test"}
	att := map[string]any{"filename": "notes.txt", "content_base64": base64.StdEncoding.EncodeToString([]byte("notes"))}
	s := scenario.New(a)
	s.Run(t,
		sc{Name: "received", Method: "GET", Path: "/v1/messages", Status: 200, Save: map[string]string{"orig": "messages.0.id", "thread": "messages.0.thread_id"}},
		sc{Name: "reply", Method: "POST", Path: "/v1/messages", Status: 200,
			Body:  map[string]any{"to": to, "subject": "Re: Question", "body": "Thanks **Ann**.\nSee you.", "reply_to_message_id": "{orig}", "attachments": []any{att}},
			Shape: shape{"id": scenario.Present, "thread_id": scenario.Var("thread"), "email_id": scenario.Present, "status": "queued"},
			Save:  map[string]string{"sent": "id", "email": "email_id"}},
		sc{Name: "thread holds both, oldest first", Method: "GET", Path: "/v1/threads/{thread}", Status: 200,
			Shape: shape{"message_count": 2, "messages": []any{shape{"direction": "received"}, shape{"id": scenario.Var("sent"), "direction": "sent",
				"from": inbox, "to": to, "in_reply_to": "q1@sender.example", "references": []any{"r0@sender.example", "q1@sender.example"},
				"html": scenario.Present, "text": "Thanks **Ann**.\nSee you.", "attachments": []any{shape{"filename": "notes.txt"}}}}}},
		sc{Name: "the email went out as the mailbox", Method: "GET", Path: "/v1/emails/{email}", Status: 200,
			Shape: shape{"from": inbox, "subject": "Re: Question"}},
		sc{Name: "new conversation", Method: "POST", Path: "/v1/messages", Status: 200,
			Body:  map[string]any{"to": to, "cc": []any{"delivered+cc@mailroom.test"}, "subject": "Hello", "body": "plain text"},
			Shape: shape{"thread_id": scenario.NotVar("thread")}},
		sc{Name: "booked", Method: "POST", Path: "/v1/messages", Status: 202,
			Body:  map[string]any{"to": to, "subject": "Later", "body": "later", "send_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
			Shape: shape{"id": nil, "scheduled_id": scenario.Present, "status": "scheduled"}, Save: map[string]string{"booked": "scheduled_id"}},
		sc{Name: "the booking's outcome", Method: "GET", Path: "/v1/messages/scheduled/{booked}", Status: 200,
			Shape: shape{"scheduled_id": scenario.Var("booked"), "status": "scheduled", "send_at": scenario.Present, "subject": "Later", "from": inbox}},
		sc{Name: "cancelled", Method: "DELETE", Path: "/v1/messages/scheduled/{booked}", Status: 200},
		sc{Name: "the outcome after cancel", Method: "GET", Path: "/v1/messages/scheduled/{booked}", Status: 200, Shape: shape{"status": "cancelled"}},
		sc{Name: "unknown booking", Method: "GET", Path: "/v1/messages/scheduled/em_nope", Status: 404, Code: "not_found"},
		sc{Name: "no to", Method: "POST", Path: "/v1/messages", Status: 422, Code: "invalid_request", Body: map[string]any{"to": []any{}, "subject": "s", "body": "b"}},
		sc{Name: "51 to", Method: "POST", Path: "/v1/messages", Status: 422, Code: "invalid_request", Body: map[string]any{"to": many(51), "subject": "s", "body": "b"}},
		sc{Name: "51 cc", Method: "POST", Path: "/v1/messages", Status: 422, Code: "invalid_request", Body: map[string]any{"to": to, "cc": many(51), "subject": "s", "body": "b"}},
		sc{Name: "no subject", Method: "POST", Path: "/v1/messages", Status: 422, Code: "invalid_request", Body: map[string]any{"to": to, "body": "b"}},
		sc{Name: "no body", Method: "POST", Path: "/v1/messages", Status: 422, Code: "invalid_request", Body: map[string]any{"to": to, "subject": "s"}},
		sc{Name: "11 attachments", Method: "POST", Path: "/v1/messages", Status: 422, Code: "invalid_request",
			Body: map[string]any{"to": to, "subject": "s", "body": "b", "attachments": []any{att, att, att, att, att, att, att, att, att, att, att}}},
		sc{Name: "unknown reply", Method: "POST", Path: "/v1/messages", Status: 404, Code: "not_found",
			Body: map[string]any{"to": to, "subject": "s", "body": "b", "reply_to_message_id": "msg_nope"}},
		sc{Name: "bad address (the sending service's check)", Method: "POST", Path: "/v1/messages", Status: 422, Code: "invalid_recipient",
			Body: map[string]any{"to": []any{"not an address"}, "subject": "s", "body": "b"}},
		sc{Name: "support", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"local_part": "support"}, Status: 201, Save: map[string]string{"support": "id"}},
		sc{Name: "bound key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "s", "mailbox_id": "{support}"}, Status: 201, Save: map[string]string{"bound": "key"}},
		sc{Name: "bound: cannot answer another mailbox's message", Method: "POST", Path: "/v1/messages", Key: "{bound}", Status: 404, Code: "not_found",
			Body: map[string]any{"to": to, "subject": "s", "body": "b", "reply_to_message_id": "{orig}"}},
		sc{Name: "bound: sends as its mailbox", Method: "POST", Path: "/v1/messages", Key: "{bound}", Status: 200,
			Body: map[string]any{"to": to, "subject": "from support", "body": "b"}, Save: map[string]string{"supportSent": "id"}},
		sc{Name: "bound: reads it", Method: "GET", Path: "/v1/messages/{supportSent}", Key: "{bound}", Status: 200, Shape: shape{"from": "support@" + host}},
		sc{Name: "suppress an address", Method: "POST", Path: "/v1/suppressions", Body: map[string]any{"email": "gone@example.net"}, Status: 201},
		sc{Name: "rejected with a reason", Method: "POST", Path: "/v1/messages", Status: 422, Code: "recipient_suppressed",
			Body: map[string]any{"to": []any{"gone@example.net"}, "subject": "s", "body": "b"}},
		sc{Name: "a booking checks nothing until its time", Method: "POST", Path: "/v1/messages", Status: 202,
			Body: map[string]any{"to": []any{"gone@example.net"}, "subject": "s", "body": "b", "send_at": "in 1 hour"}},
	)
}

func many(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = "delivered@mailroom.test"
	}
	return out
}
