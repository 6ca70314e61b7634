package inbound_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"mailroom/internal/events"
	"mailroom/internal/testkit/scenario"
	"mailroom/internal/testkit/testapp"
)

// receivedEvent reads the email.received event of message id as webhooks
// and the event stream read it, and returns its data.
func receivedEvent(t *testing.T, a *testapp.App, id string) map[string]any {
	t.Helper()
	var data map[string]any
	if err := json.Unmarshal(receivedEventJSON(t, a, id), &data); err != nil {
		t.Fatal(err)
	}
	return data
}

// receivedEventJSON is receivedEvent's data as the envelope carries it.
func receivedEventJSON(t *testing.T, a *testapp.App, id string) json.RawMessage {
	t.Helper()
	ctx := context.Background()
	top, err := events.MaxSeq(ctx, a.DB)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := events.WebhookEventsIn(ctx, a.DB, a.WorkspaceID, 0, top, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stored {
		body, err := st.Envelope()
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Event string
			Data  json.RawMessage
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		var ref struct {
			MessageID string `json:"message_id"`
		}
		if err := json.Unmarshal(env.Data, &ref); err != nil {
			t.Fatal(err)
		}
		if env.Event == events.EmailReceived && ref.MessageID == id {
			// The dispatcher's read (Envelopes) gives the same body.
			var sent []byte
			if err := events.Envelopes(ctx, a.DB, []any{st.Seq}, func(_, _ string, b []byte) { sent = b }); err != nil || !bytes.Equal(sent, body) {
				t.Errorf("Envelopes: %s (%v), want %s", sent, err, body)
			}
			return env.Data
		}
	}
	t.Fatalf("no email.received for %s among %d events", id, len(stored))
	return nil
}

// The log stores email.received as a reference to its message, and the
// event read back carries what GET /v1/messages/{id} shows, flags aside;
// once the message is deleted only its id is left. The text is indexed
// without a second copy.
func TestReceivedEventByReference(t *testing.T) {
	a, inbox := startSMTP(t)
	ctx := context.Background()
	if err := send(t, a.SMTPAddr(), "ann@sender.example", []string{inbox}, sampleMessage(inbox, "Reference", "ref1@sender.example", "X-Extra: yes\r\n")); err != nil {
		t.Fatal(err)
	}
	s := scenario.New(a)
	s.Run(t, sc{Name: "received", Method: "GET", Path: "/v1/messages", Status: 200, Shape: shape{"messages": scenario.Len(1)},
		Save: map[string]string{"msg": "messages.0.id", "thread": "messages.0.thread_id"}})

	var data string
	if err := a.DB.QueryRow(ctx, `SELECT data FROM events WHERE workspace_id = ? AND type = 'email.received'`, a.WorkspaceID).Scan(&data); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(data, `{"received_message":"`+s.Get("msg")+`"`) || len(data) > 200 {
		t.Errorf("stored data %s, want a reference", data)
	}

	// The bytes a webhook carries are those stored in full before
	// (testdata/email_received.json, ids and workspace name replaced).
	got := receivedEventJSON(t, a, s.Get("msg"))
	want, err := os.ReadFile("testdata/email_received.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ re, to string }{{`msg_[0-9a-z]+`, "MSG"}, {`thr_[0-9a-z]+`, "THR"}, {`test-workspace-[0-9a-z]+`, "WS"}} {
		got = regexp.MustCompile(r.re).ReplaceAll(got, []byte(r.to))
	}
	if !bytes.Equal(got, bytes.TrimSpace(want)) {
		t.Errorf("email.received data\n%s\nwant\n%s", got, want)
	}
	ev := receivedEvent(t, a, s.Get("msg"))
	var msg map[string]any
	a.Do("GET", "/v1/messages/"+s.Get("msg"), nil).Decode(t, &msg)
	for _, k := range []string{"id", "object", "direction", "unread", "archived", "received_at"} {
		delete(msg, k)
	}
	if !reflect.DeepEqual(ev, msg) {
		evj, _ := json.Marshal(ev)
		msgj, _ := json.Marshal(msg)
		t.Errorf("event data\n%s\nwant the message's\n%s", evj, msgj)
	}
	if len(ev["attachments"].([]any)) != 2 || len(ev["inline_images"].([]any)) != 1 || ev["text"] != "Hello café world.\r\nSecond line." {
		t.Errorf("event data %v", ev)
	}

	// The body is indexed from text_body (search_body holds no copy) and
	// leaves the index with the message.
	var stored string
	if err := a.DB.QueryRow(ctx, `SELECT search_body FROM messages WHERE id = ?`, s.Get("msg")).Scan(&stored); err != nil || stored != "" {
		t.Errorf("search_body %q (%v), want it empty beside the text body", stored, err)
	}
	s.Run(t,
		sc{Name: "found by its text", Method: "GET", Path: "/v1/search?q=second+line", Status: 200,
			Shape: shape{"hits": []any{shape{"message_id": scenario.Var("msg"), "excerpt": "Hello café world. Second line."}}}},
		sc{Name: "deleted", Method: "DELETE", Path: "/v1/inboxes/" + inbox + "/threads/{thread}", Status: 200},
		sc{Name: "gone from the index", Method: "GET", Path: "/v1/search?q=second+line", Status: 200, Shape: shape{"hits": scenario.Len(0)}},
	)
	if ev := receivedEvent(t, a, s.Get("msg")); len(ev) != 1 {
		t.Errorf("a deleted message's event carries %v, want its message_id only", ev)
	}
}
