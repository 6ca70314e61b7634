package inbound_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// hookSink records the webhook deliveries it is sent.
type hookSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newHookSink(t *testing.T) *hookSink {
	h := &hookSink{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		h.mu.Lock()
		h.bodies = append(h.bodies, m)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// received lists the recipients of the email.received events it got.
func (h *hookSink) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, b := range h.bodies {
		if b["event"] != "email.received" {
			continue
		}
		data, _ := b["data"].(map[string]any)
		raw, _ := json.Marshal(data["to"])
		out = append(out, string(raw))
	}
	return out
}

// emails lists the email ids of the email.delivered events it got.
func (h *hookSink) emails() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, b := range h.bodies {
		data, _ := b["data"].(map[string]any)
		if id, _ := data["email_id"].(string); b["event"] == "email.delivered" {
			out = append(out, id)
		}
	}
	return out
}

// eventID is the id of the first email.received event whose recipients
// mention addr.
func (h *hookSink) eventID(addr string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.bodies {
		data, _ := b["data"].(map[string]any)
		raw, _ := json.Marshal(data["to"])
		if b["event"] == "email.received" && strings.Contains(string(raw), addr) {
			id, _ := b["id"].(string)
			return id
		}
	}
	return ""
}

// deliveredEventID is the id of the email.delivered event of email.
func (h *hookSink) deliveredEventID(email string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.bodies {
		data, _ := b["data"].(map[string]any)
		if b["event"] == "email.delivered" && data["email_id"] == email {
			id, _ := b["id"].(string)
			return id
		}
	}
	return ""
}

// TestBoundKeyStaysInItsMailbox: a key bound to one mailbox sees and
// touches only that mailbox, on every route (issue #38, finding 1): its
// webhooks are scoped to its mailbox even when the body names none, other
// endpoints and keys answer 404, its /v1/emails are those sent from its
// mailbox, replays of another mailbox's events are not found, and
// workspace-wide routes answer 403.
func TestBoundKeyStaysInItsMailbox(t *testing.T) {
	a, inbox := startSMTP(t)
	_, host, _ := strings.Cut(inbox, "@")
	support := "support@" + host
	all, mine := newHookSink(t), newHookSink(t)
	to := []any{"delivered@mailroom.test"}
	s := scenario.New(a)
	s.Set("allURL", all.srv.URL)
	s.Set("mineURL", mine.srv.URL)
	s.Run(t,
		sc{Name: "owner's key id", Method: "GET", Path: "/v1/api-keys", Status: 200, Save: map[string]string{"ownerKey": "api_keys.0.id"}},
		sc{Name: "the inbox", Method: "GET", Path: "/v1/mailboxes", Status: 200, Save: map[string]string{"inbox": "mailboxes.0.id"}},
		sc{Name: "support", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"local_part": "support"}, Status: 201, Save: map[string]string{"support": "id"}},
		sc{Name: "bound key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "support", "mailbox_id": "{support}"}, Status: 201,
			Save: map[string]string{"bound": "key", "boundID": "id"}},
		sc{Name: "owner's endpoint for every mailbox", Method: "POST", Path: "/v1/webhooks", Status: 201,
			Body: map[string]any{"url": "{allURL}", "events": []any{"email.received", "email.delivered"}}, Shape: shape{"mailbox_id": nil}, Save: map[string]string{"allHook": "id"}},
		sc{Name: "bound key's endpoint is scoped though the body names no mailbox", Method: "POST", Path: "/v1/webhooks", Key: "{bound}", Status: 201,
			Body: map[string]any{"url": "{mineURL}", "events": []any{"email.received", "email.delivered"}}, Shape: shape{"mailbox_id": scenario.Var("support")}, Save: map[string]string{"mineHook": "id"}},
		sc{Name: "bound key lists only its endpoint", Method: "GET", Path: "/v1/webhooks", Key: "{bound}", Status: 200,
			Shape: shape{"webhooks": []any{shape{"id": scenario.Var("mineHook")}}}},
		sc{Name: "bound key reads another endpoint", Method: "GET", Path: "/v1/webhooks/{allHook}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound key repoints another endpoint", Method: "PATCH", Path: "/v1/webhooks/{allHook}", Key: "{bound}", Body: map[string]any{"url": "{mineURL}"}, Status: 404, Code: "not_found"},
		sc{Name: "bound key deletes another endpoint", Method: "DELETE", Path: "/v1/webhooks/{allHook}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound key tests another endpoint", Method: "POST", Path: "/v1/webhooks/deliveries", Key: "{bound}", Body: map[string]any{"webhook_id": "{allHook}"}, Status: 404, Code: "not_found"},
		sc{Name: "bound key reads another endpoint's log", Method: "GET", Path: "/v1/webhooks/deliveries?webhook_id={allHook}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound key lists only keys bound like it", Method: "GET", Path: "/v1/api-keys", Key: "{bound}", Status: 200,
			Shape: shape{"api_keys": []any{shape{"id": scenario.Var("boundID")}}}},
		sc{Name: "bound key revokes the owner's key", Method: "DELETE", Path: "/v1/api-keys/{ownerKey}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound key on a workspace-wide route", Method: "GET", Path: "/v1/domains", Key: "{bound}", Status: 403, Code: "insufficient_scope"},
		sc{Name: "bound key on contacts", Method: "GET", Path: "/v1/contacts", Key: "{bound}", Status: 403, Code: "insufficient_scope", Errors: scenario.Flat},
		sc{Name: "owner sends from the inbox", Method: "POST", Path: "/v1/messages", Body: map[string]any{"to": to, "subject": "from inbox", "body": "b"}, Status: 200,
			Save: map[string]string{"inboxEmail": "email_id"}},
		sc{Name: "bound key sends from support", Method: "POST", Path: "/v1/messages", Key: "{bound}", Body: map[string]any{"to": to, "subject": "from support", "body": "b"}, Status: 200,
			Save: map[string]string{"supportEmail": "email_id"}},
		sc{Name: "bound key's emails are support's", Method: "GET", Path: "/v1/emails", Key: "{bound}", Status: 200,
			Shape: shape{"data": []any{shape{"id": scenario.Var("supportEmail"), "from": support}}}},
		sc{Name: "bound key reads the inbox's email", Method: "GET", Path: "/v1/emails/{inboxEmail}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound key sends as another address", Method: "POST", Path: "/v1/emails", Key: "{bound}", Status: 403, Code: "insufficient_scope",
			Body: map[string]any{"from": inbox, "to": to, "subject": "s", "text": "t"}},
		sc{Name: "owner reads both", Method: "GET", Path: "/v1/emails", Status: 200, Shape: shape{"data": scenario.Len(2)}},
	)

	for _, rcpt := range []string{inbox, support} {
		if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{rcpt}, sampleMessage(rcpt, "Hello "+rcpt, "m-"+rcpt, "")); err != nil {
			t.Fatal(err)
		}
	}
	testapp.Eventually(t, 20*time.Second, func() bool {
		return len(all.received()) == 2 && len(mine.received()) >= 1 && len(all.emails()) == 2 && len(mine.emails()) >= 1
	}, "the endpoint for every mailbox gets both messages and both sends (%v, %v) and the bound one its own (%v, %v)",
		all.received(), all.emails(), mine.received(), mine.emails())
	// Each event was fanned out to both endpoints in one pass before the
	// first endpoint saw it: once the delivery queue is empty, every
	// delivery owed to the bound endpoint was made, and it got its own
	// and nothing else.
	testapp.Eventually(t, 20*time.Second, func() bool {
		var pending int
		if err := a.DB.QueryRow(t.Context(), `SELECT count(*) FROM webhook_deliveries WHERE webhook_id IN (?, ?)`,
			s.Get("allHook"), s.Get("mineHook")).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		return pending == 0
	}, "webhook deliveries still pending")
	if got := mine.received(); len(got) != 1 || !strings.Contains(got[0], support) {
		t.Fatalf("the bound key's endpoint got %v, want support's message only", got)
	}
	if got := mine.emails(); len(got) != 1 || got[0] != s.Get("supportEmail") {
		t.Fatalf("the bound key's endpoint got email.delivered for %v, want only %s (support's)", got, s.Get("supportEmail"))
	}

	s.Set("inboxEvent", all.eventID(inbox))
	s.Set("supportEvent", all.eventID(support))
	s.Set("inboxSendEvent", all.deliveredEventID(s.Get("inboxEmail")))
	s.Run(t,
		sc{Name: "bound key replays the inbox's outgoing mail's event", Method: "POST", Path: "/v1/webhooks/deliveries", Key: "{bound}",
			Body: map[string]any{"delivery_id": "{inboxSendEvent}", "webhook_id": "{mineHook}"}, Status: 404, Code: "not_found"},
		sc{Name: "bound key replays the inbox's event", Method: "POST", Path: "/v1/webhooks/deliveries", Key: "{bound}",
			Body: map[string]any{"delivery_id": "{inboxEvent}", "webhook_id": "{mineHook}"}, Status: 404, Code: "not_found"},
		sc{Name: "owner replays the inbox's event to support's endpoint", Method: "POST", Path: "/v1/webhooks/deliveries",
			Body: map[string]any{"delivery_id": "{inboxEvent}", "webhook_id": "{mineHook}"}, Status: 400, Code: "invalid_request"},
		sc{Name: "bound key replays its own event", Method: "POST", Path: "/v1/webhooks/deliveries", Key: "{bound}",
			Body: map[string]any{"delivery_id": "{supportEvent}", "webhook_id": "{mineHook}"}, Status: 200, Shape: shape{"success": true}},
		sc{Name: "bound key's log holds only its endpoint", Method: "GET", Path: "/v1/webhooks/deliveries", Key: "{bound}", Status: 200,
			Shape: shape{"deliveries": scenario.Each(shape{"webhook_id": scenario.Var("mineHook")})}},
	)
}

// TestNoKeyMintsMore: a new key's scopes and bindings are a subset of the
// creating key's (issue #38, finding 2), and forwarding or replying to
// received mail needs mail:read as well as mail:send (finding 3).
func TestNoKeyMintsMore(t *testing.T) {
	a, inbox := startSMTP(t)
	if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{inbox}, sampleMessage(inbox, "Secret", "s1@sender.example", "")); err != nil {
		t.Fatal(err)
	}
	to := []any{"delivered@mailroom.test"}
	s := scenario.New(a)
	s.Run(t,
		sc{Name: "received", Method: "GET", Path: "/v1/messages", Status: 200, Save: map[string]string{"orig": "messages.0.id"}},
		sc{Name: "workspace-only key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "admin", "scopes": []any{"workspace"}}, Status: 201,
			Save: map[string]string{"admin": "key"}},
		sc{Name: "it cannot mint every scope by omitting them", Method: "POST", Path: "/v1/api-keys", Key: "{admin}", Body: map[string]any{"name": "x"}, Status: 403, Code: "insufficient_scope"},
		sc{Name: "nor by naming them", Method: "POST", Path: "/v1/api-keys", Key: "{admin}", Body: map[string]any{"name": "x", "scopes": []any{"workspace", "mail:read"}}, Status: 403, Code: "insufficient_scope"},
		sc{Name: "nor by Resend's permission", Method: "POST", Path: "/v1/api-keys", Key: "{admin}", Body: map[string]any{"name": "x", "permission": "full_access"}, Status: 403, Code: "insufficient_scope"},
		sc{Name: "it mints what it holds", Method: "POST", Path: "/v1/api-keys", Key: "{admin}", Body: map[string]any{"name": "x", "scopes": []any{"workspace"}}, Status: 201,
			Shape: shape{"scopes": []any{"workspace"}}},
		sc{Name: "send-only key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "sender", "scopes": []any{"mail:send"}}, Status: 201,
			Save: map[string]string{"sender": "key"}},
		sc{Name: "send-only key forwards received mail", Method: "POST", Path: "/v1/messages/{orig}/forward", Key: "{sender}", Body: map[string]any{"to": to}, Status: 403, Code: "insufficient_scope"},
		sc{Name: "send-only key replies to all", Method: "POST", Path: "/v1/messages/{orig}/reply-all", Key: "{sender}", Body: map[string]any{"body": "hi"}, Status: 403, Code: "insufficient_scope"},
		sc{Name: "send-only key still sends", Method: "POST", Path: "/v1/emails", Key: "{sender}", Status: 200,
			Body: map[string]any{"from": "onboarding@mailroom.test", "to": to, "subject": "s", "text": "t"}},
		sc{Name: "a full key forwards", Method: "POST", Path: "/v1/messages/{orig}/forward", Body: map[string]any{"to": to}, Status: 200},
	)
}
