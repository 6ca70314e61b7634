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
)

// TestRulesEventsAndBoundKeys: a bound mailbox's rules drop (email.filtered,
// nothing stored), archive and mark read; email.received reaches the
// unscoped endpoint and the one scoped to its mailbox, never another
// mailbox's; a bound key never sees another mailbox's message, thread or
// attachment.
func TestRulesEventsAndBoundKeys(t *testing.T) {
	a, inbox := startSMTP(t)
	_, host, _ := strings.Cut(inbox, "@")

	var mu sync.Mutex
	got := map[string][]string{} // endpoint path -> "event subject"
	arrived := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			Event string `json:"event"`
			Data  struct {
				Subject string `json:"subject"`
			} `json:"data"`
		}
		json.Unmarshal(body, &ev)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], ev.Event+" "+ev.Data.Subject)
		mu.Unlock()
		arrived <- struct{}{}
	}))
	defer srv.Close()

	s := scenario.New(a)
	evs := []any{"email.received", "email.filtered"}
	s.Run(t,
		sc{Name: "support", Method: "POST", Path: "/v1/mailboxes", Body: map[string]any{"local_part": "support"}, Status: 201, Save: map[string]string{"support": "id"}},
		sc{Name: "inbox", Method: "GET", Path: "/v1/mailboxes", Status: 200, Save: map[string]string{"inbox": "mailboxes.0.id"}},
		sc{Name: "bound key", Method: "POST", Path: "/v1/api-keys", Body: map[string]any{"name": "s", "mailbox_id": "{support}"}, Status: 201, Save: map[string]string{"bound": "key"}},
		sc{Name: "rules", Method: "PUT", Path: "/v1/identity/rules", Key: "{bound}", Status: 200, Body: map[string]any{"rules": []any{
			map[string]any{"match": map[string]any{"from": "@spam.example"}, "action": "drop"},
			map[string]any{"match": map[string]any{"subject": "NEWSLETTER"}, "action": "archive"},
			map[string]any{"match": map[string]any{"from": "boss@corp.example", "subject": "fyi"}, "action": "mark_read"},
		}}},
		sc{Name: "hook all", Method: "POST", Path: "/v1/webhooks", Status: 201, Body: map[string]any{"url": srv.URL + "/all", "events": evs}, Shape: shape{"mailbox_id": nil}},
		sc{Name: "hook support", Method: "POST", Path: "/v1/webhooks", Status: 201, Body: map[string]any{"url": srv.URL + "/support", "events": evs, "mailbox_id": "{support}"},
			Shape: shape{"mailbox_id": scenario.Var("support")}},
		sc{Name: "hook inbox", Method: "POST", Path: "/v1/webhooks", Status: 201, Body: map[string]any{"url": srv.URL + "/inbox", "events": evs, "mailbox_id": "{inbox}"}},
		sc{Name: "hook unknown mailbox", Method: "POST", Path: "/v1/webhooks", Status: 404, Code: "not_found", Body: map[string]any{"url": srv.URL + "/x", "mailbox_id": "mbx_nope"}},
	)
	support := "support@" + host
	for _, m := range []struct{ from, subject, to string }{
		{"x@spam.example", "buy now", support},
		{"news@shop.example", "Weekly newsletter", support},
		{"boss@corp.example", "FYI numbers", support},
		{"ann@corp.example", "hello support", support},
		{"ann@corp.example", "hello inbox", inbox},
	} {
		raw := "From: " + m.from + "\r\nTo: " + m.to + "\r\nSubject: " + m.subject + "\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=f.pdf\r\n\r\npdf\r\n--b--\r\n"
		if err := send(t, a.SMTPAddr(), m.from, []string{m.to}, raw); err != nil {
			t.Fatalf("%s: %v", m.subject, err)
		}
	}
	// 5 to /all, 4 to /support, 1 to /inbox.
	for i := 0; i < 10; i++ {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d deliveries: %v", i, got)
		}
	}
	mu.Lock()
	if len(got["/all"]) != 5 || len(got["/support"]) != 4 || len(got["/inbox"]) != 1 || got["/inbox"][0] != "email.received hello inbox" {
		t.Errorf("deliveries %v", got)
	}
	if !strings.Contains(strings.Join(got["/support"], ","), "email.filtered buy now") {
		t.Errorf("no email.filtered: %v", got)
	}
	mu.Unlock()

	s.Run(t,
		sc{Name: "dropped is not stored, archived is hidden", Method: "GET", Path: "/v1/messages", Key: "{bound}", Status: 200,
			Shape: shape{"messages": []any{shape{"subject": "hello support", "unread": true}, shape{"subject": "FYI numbers", "unread": false}}}},
		sc{Name: "archived", Method: "GET", Path: "/v1/messages?include_archived=true&unread_only=true", Key: "{bound}", Status: 200,
			Shape: shape{"messages": []any{shape{"subject": "hello support"}, shape{"subject": "Weekly newsletter", "archived": true}}}},
		sc{Name: "unbound sees both mailboxes", Method: "GET", Path: "/v1/messages", Status: 200, Shape: shape{"messages": scenario.Len(3)},
			Save: map[string]string{"inboxMsg": "messages.0.id", "inboxThread": "messages.0.thread_id"}},
		sc{Name: "unbound narrows", Method: "GET", Path: "/v1/messages?mailbox_id={inbox}", Status: 200, Shape: shape{"messages": []any{shape{"subject": "hello inbox"}}}},
		sc{Name: "bound: other message", Method: "GET", Path: "/v1/messages/{inboxMsg}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: other attachment", Method: "GET", Path: "/v1/messages/{inboxMsg}/attachments/f.pdf", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: other archive", Method: "POST", Path: "/v1/messages/{inboxMsg}/archive", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: other thread", Method: "GET", Path: "/v1/threads/{inboxThread}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "bound: threads", Method: "GET", Path: "/v1/threads", Key: "{bound}", Status: 200, Shape: shape{"threads": scenario.Len(3)}},
		sc{Name: "bound: asks for the other mailbox", Method: "GET", Path: "/v1/messages?mailbox_id={inbox}", Key: "{bound}", Status: 404, Code: "not_found"},
		sc{Name: "unbound reads it", Method: "GET", Path: "/v1/messages/{inboxMsg}/attachments/f.pdf", Status: 200},
	)
}
