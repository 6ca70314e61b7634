package inbound_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// TestInboxesOverMailboxes: the Resend SDKs' inboxes are the mailboxes,
// their threads and messages, through /v1/inboxes; a key bound to one
// mailbox reaches no other inbox, thread or message there (404), and
// cannot create an inbox (403).
func TestInboxesOverMailboxes(t *testing.T) {
	a, inbox := startSMTP(t)
	_, host, _ := strings.Cut(inbox, "@")
	support := "support@" + host
	s := scenario.New(a)
	s.Set("inboxAddr", inbox)
	s.Run(t,
		sc{Name: "support as an inbox", Method: "POST", Path: "/v1/inboxes", Body: map[string]any{"email_address": support, "name": "Support"}, Status: 201,
			Shape: shape{"object": "inbox", "email_address": support, "name": "Support", "from_name": "Support", "last_received": nil}, Save: map[string]string{"support": "id"}},
		sc{Name: "no address", Method: "POST", Path: "/v1/inboxes", Body: map[string]any{"name": "x"}, Status: 400, Code: "invalid_request"},
		sc{Name: "name and from_name differ", Method: "POST", Path: "/v1/inboxes", Body: map[string]any{"email_address": "x@" + host, "name": "a", "from_name": "b"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "unknown field", Method: "POST", Path: "/v1/inboxes", Body: map[string]any{"email_address": "x@" + host, "color": "red"}, Status: 400, Code: "invalid_request"},
		sc{Name: "bound key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "support", "mailbox_id": "{support}"}, Status: 201,
			Save: map[string]string{"bound": "key"}},
		sc{Name: "the inbox by address", Method: "GET", Path: "/v1/inboxes/{inboxAddr}", Status: 200, Shape: shape{"email_address": inbox},
			Save: map[string]string{"inbox": "id"}},
	)
	for _, rcpt := range []string{inbox, support} {
		if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{rcpt}, sampleMessage(rcpt, "Quarterly numbers "+rcpt, "q-"+rcpt, "")); err != nil {
			t.Fatal(err)
		}
	}
	testapp.Eventually(t, 10*time.Second, func() bool {
		return len(a.Do("GET", "/v1/messages", nil).JSON()["messages"].([]any)) == 2
	}, "both messages stored")

	s.Run(t,
		sc{Name: "two inboxes", Method: "GET", Path: "/v1/inboxes", Status: 200, Shape: shape{"object": "list", "has_more": false, "data": scenario.Len(2)}},
		sc{Name: "the inbox's threads", Method: "GET", Path: "/v1/inboxes/{inbox}/threads", Status: 200,
			Shape: shape{"data": []any{shape{"object": "inbox_thread", "from": "ann@sender.example", "email_count": float64(1), "has_attachment": true,
				"read": false, "folder": "inbox", "labels": []any{}, "subject": "Quarterly numbers " + inbox}}},
			Save: map[string]string{"thread": "data.0.id"}},
		sc{Name: "support's threads", Method: "GET", Path: "/v1/inboxes/{support}/threads", Status: 200, Shape: shape{"data": scenario.Len(1)},
			Save: map[string]string{"supportThread": "data.0.id"}},
		sc{Name: "search finds the inbox's thread only", Method: "GET", Path: "/v1/inboxes/{inbox}/threads/search?query=quarterly", Status: 200,
			Shape: shape{"data": []any{shape{"id": scenario.Var("thread"), "matched_email_id": scenario.Prefix("msg_")}}}},
		sc{Name: "search without words", Method: "GET", Path: "/v1/inboxes/{inbox}/threads/search", Status: 400, Code: "invalid_request"},
		sc{Name: "labels are not offered", Method: "GET", Path: "/v1/inboxes/{inbox}/threads?labels=x", Status: 400, Code: "invalid_request"},
		sc{Name: "another inbox's thread", Method: "GET", Path: "/v1/inboxes/{support}/threads/{thread}", Status: 404, Code: "not_found"},

		// The bound key stays in support.
		sc{Name: "bound: lists only support", Method: "GET", Path: "/v1/inboxes", Key: "{bound}", Status: 200,
			Shape: shape{"data": []any{shape{"id": scenario.Var("support")}}}},
		sc{Name: "bound: the inbox", Method: "GET", Path: "/v1/inboxes/{inbox}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: the inbox by address", Method: "GET", Path: "/v1/inboxes/{inboxAddr}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: the inbox's threads", Method: "GET", Path: "/v1/inboxes/{inbox}/threads", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: the inbox's thread under support", Method: "GET", Path: "/v1/inboxes/{support}/threads/{thread}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: marks the inbox's thread", Method: "PATCH", Path: "/v1/inboxes/{inbox}/threads/{thread}", Key: "{bound}",
			Body: map[string]any{"read": true}, Status: 404, Code: "not_found"},
		sc{Name: "bound: removes the inbox's thread", Method: "DELETE", Path: "/v1/inboxes/{inbox}/threads/{thread}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: renames the inbox", Method: "PATCH", Path: "/v1/inboxes/{inbox}", Key: "{bound}", Body: map[string]any{"name": "mine"}, Status: 404, Code: "not_found"},
		sc{Name: "bound: removes the inbox", Method: "DELETE", Path: "/v1/inboxes/{inbox}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: creates an inbox", Method: "POST", Path: "/v1/inboxes", Key: "{bound}", Body: map[string]any{"email_address": "new@" + host},
			Status: 403, Code: "insufficient_scope"},
		sc{Name: "bound: searches the inbox", Method: "GET", Path: "/v1/inboxes/{inbox}/threads/search?query=quarterly", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: its own thread", Method: "GET", Path: "/v1/inboxes/{support}/threads/{supportThread}", Key: "{bound}", Status: 200,
			Shape: shape{"id": scenario.Var("supportThread")}},

		// Marking, reading, replying, forwarding, removing.
		sc{Name: "archive and read", Method: "PATCH", Path: "/v1/inboxes/{inbox}/threads/{thread}", Body: map[string]any{"read": true, "folder": "archive"},
			Status: 200, Shape: shape{"folder": "archive", "read": true}},
		sc{Name: "no longer in inbox", Method: "GET", Path: "/v1/inboxes/{inbox}/threads?folders=inbox", Status: 200, Shape: shape{"data": scenario.Len(0)}},
		sc{Name: "in archive", Method: "GET", Path: "/v1/inboxes/{inbox}/threads?folders=archive&read=true", Status: 200, Shape: shape{"data": scenario.Len(1)}},
		sc{Name: "unknown folder filter", Method: "GET", Path: "/v1/inboxes/{inbox}/threads?folders=junk", Status: 400, Code: "invalid_request"},
		sc{Name: "to trash", Method: "PATCH", Path: "/v1/inboxes/{inbox}/threads/{thread}", Body: map[string]any{"folder": "trash"}, Status: 422, Code: "unsupported_folder"},
		sc{Name: "nothing to change", Method: "PATCH", Path: "/v1/inboxes/{inbox}/threads/{thread}", Body: map[string]any{}, Status: 400, Code: "invalid_request"},
		sc{Name: "its emails", Method: "GET", Path: "/v1/inboxes/{inbox}/threads/{thread}/emails", Status: 200,
			Shape: shape{"data": []any{shape{"direction": "inbound", "from": "ann@sender.example", "read": true}}}, Save: map[string]string{"email": "data.0.id"}},
		sc{Name: "one email", Method: "GET", Path: "/v1/inboxes/{inbox}/threads/{thread}/emails/{email}", Status: 200,
			Shape: shape{"id": scenario.Var("email"), "attachments": scenario.Len(2)}},
		sc{Name: "the email under support's thread", Method: "GET", Path: "/v1/inboxes/{inbox}/threads/{supportThread}/emails/{email}", Status: 404, Code: "not_found"},
		sc{Name: "bound: replies to the inbox's email", Method: "POST", Path: "/v1/inboxes/{support}/threads/{supportThread}/emails/{email}/reply", Key: "{bound}",
			Body: map[string]any{"text": "x"}, Status: 404, Code: "not_found"},
		sc{Name: "reply in html alone", Method: "POST", Path: "/v1/inboxes/{inbox}/threads/{thread}/emails/{email}/reply", Body: map[string]any{"html": "<p>x</p>"},
			Status: 400, Code: "invalid_request"},
		sc{Name: "reply", Method: "POST", Path: "/v1/inboxes/{inbox}/threads/{thread}/emails/{email}/reply", Body: map[string]any{"text": "Thanks, **Ann**."},
			Status: 200, Shape: shape{"id": scenario.Present, "thread_id": scenario.Var("thread")}, Save: map[string]string{"replyEmail": "id"}},
		sc{Name: "the reply went to the sender", Method: "GET", Path: "/v1/emails/{replyEmail}", Status: 200,
			Shape: shape{"to": []any{"ann@sender.example"}, "from": inbox, "subject": "Re: Quarterly numbers " + inbox}},
		sc{Name: "the thread holds the reply", Method: "GET", Path: "/v1/inboxes/{inbox}/threads/{thread}/emails", Status: 200,
			Shape: shape{"data": []any{shape{"direction": "inbound"}, shape{"direction": "outbound"}}}},
		sc{Name: "forward with a subject", Method: "POST", Path: "/v1/inboxes/{inbox}/threads/{thread}/emails/{email}/forward",
			Body: map[string]any{"to": "delivered@mailroom.test", "subject": "x"}, Status: 400, Code: "invalid_request"},
		sc{Name: "forward", Method: "POST", Path: "/v1/inboxes/{inbox}/threads/{thread}/emails/{email}/forward",
			Body: map[string]any{"to": "delivered@mailroom.test", "text": "FYI"}, Status: 200, Save: map[string]string{"fwdEmail": "id"}},
		sc{Name: "the forward", Method: "GET", Path: "/v1/emails/{fwdEmail}", Status: 200,
			Shape: shape{"to": []any{"delivered@mailroom.test"}, "subject": "Fwd: Quarterly numbers " + inbox}},
		sc{Name: "remove the thread", Method: "DELETE", Path: "/v1/inboxes/{inbox}/threads/{thread}", Status: 200,
			Shape: shape{"object": "inbox_thread", "id": scenario.Var("thread"), "deleted": true}},
		sc{Name: "the thread is gone", Method: "GET", Path: "/v1/threads/{thread}", Status: 404, Code: "not_found"},
		sc{Name: "its message is gone", Method: "GET", Path: "/v1/messages/{email}", Status: 404, Code: "not_found"},
		sc{Name: "search finds nothing now", Method: "GET", Path: "/v1/inboxes/{inbox}/threads/search?query=quarterly", Status: 200, Shape: shape{"data": scenario.Len(0)}},
		sc{Name: "support's thread stays", Method: "GET", Path: "/v1/inboxes/{support}/threads", Status: 200, Shape: shape{"data": scenario.Len(1)}},

		sc{Name: "rename", Method: "PATCH", Path: "/v1/inboxes/{support}", Body: map[string]any{"from_name": "Help desk"}, Status: 200,
			Shape: shape{"name": "Help desk", "from_name": "Help desk", "last_received": scenario.Present}},
		sc{Name: "the mailbox is renamed", Method: "GET", Path: "/v1/mailboxes/{support}", Status: 200, Shape: shape{"name": "Help desk"}},
		sc{Name: "remove support", Method: "DELETE", Path: "/v1/inboxes/{support}", Status: 200, Shape: shape{"object": "inbox", "deleted": true}},
		sc{Name: "support is gone", Method: "GET", Path: "/v1/mailboxes/{support}", Status: 404, Code: "not_found"},
	)
}

// TestReceivedRawDownload: a received email's raw.download_url serves the
// message as it arrived without a key, and only that message.
func TestReceivedRawDownload(t *testing.T) {
	a, inbox := startSMTP(t)
	for i, subject := range []string{"First raw", "Second raw"} {
		if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{inbox}, sampleMessage(inbox, subject, "raw"+string(rune('a'+i))+"@sender.example", "")); err != nil {
			t.Fatal(err)
		}
	}
	testapp.Eventually(t, 10*time.Second, func() bool {
		return len(a.Do("GET", "/v1/messages", nil).JSON()["messages"].([]any)) == 2
	}, "both messages stored")
	list := a.Do("GET", "/v1/emails/receiving", nil).JSON()["data"].([]any)
	first, second := list[1].(map[string]any)["id"].(string), list[0].(map[string]any)["id"].(string)
	raw := a.Do("GET", "/v1/emails/receiving/"+first, nil).JSON()["raw"].(map[string]any)
	dl := raw["download_url"].(string)
	if !strings.HasPrefix(dl, "http") || raw["expires_at"] == nil {
		t.Fatalf("raw = %v", raw)
	}
	get := func(u string) (int, string) {
		t.Helper()
		u = a.URL + u[strings.Index(u, "/v1/"):] // the public URL is not this node's address in tests
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(dl); code != 200 || !strings.Contains(body, "Subject: First raw") {
		t.Fatalf("download: %d %.200s", code, body)
	}
	if code, _ := get(strings.Replace(dl, first, second, 1)); code != 404 {
		t.Fatalf("the token opened another message: %d", code)
	}
	// a character in the token's middle changed: its last ones may carry
	// unused base64 bits, and "xx" may be what was there
	mid := strings.Index(dl, "token=") + 6 + (len(dl)-strings.Index(dl, "token=")-6)/2
	swap := map[bool]string{true: "A", false: "B"}[dl[mid] != 'A']
	if code, _ := get(dl[:mid] + swap + dl[mid+1:]); code != 404 {
		t.Fatalf("a tampered token: %d", code)
	}
	if code, _ := get(strings.SplitN(dl, "?", 2)[0]); code != 401 {
		t.Fatalf("no token, no key: %d", code)
	}
}
