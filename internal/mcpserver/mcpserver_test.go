package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mailroom/internal/mcpserver"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// node is a running Mailroom with inbound SMTP, delivering by MX to sink,
// acme.example verified, and its first mailbox's address.
type node struct {
	*testapp.App
	sink    *smtpsink.Sink
	inbox   string // the first mailbox's address
	inboxID string
}

func setup(t *testing.T) *node {
	t.Helper()
	dns, sink := dnstest.Start(t), smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink), testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	var list struct {
		Mailboxes []struct{ ID, Address string }
	}
	a.Do("GET", "/v1/mailboxes", nil).Decode(t, &list)
	return &node{App: a, sink: sink, inbox: list.Mailboxes[0].Address, inboxID: list.Mailboxes[0].ID}
}

// connect is an MCP client session with the server, in memory, whose
// tools use key.
func connect(t *testing.T, url, key string) *mcp.ClientSession {
	t.Helper()
	s, err := mcpserver.New(mcpserver.Options{URL: url, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// call calls a tool and decodes its text, the API's JSON (or its error).
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var out map[string]any
	if res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil || out["error"] == nil {
			t.Fatalf("%s: an error without the API's error: %q %s", name, text, b)
		}
		return out["error"].(map[string]any), true
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: text is not the API's JSON: %q", name, text)
	}
	return out, false
}

// ok calls a tool that must succeed.
func ok(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	out, failed := call(t, cs, name, args)
	if failed {
		t.Fatalf("%s refused: %v", name, out)
	}
	return out
}

// receive delivers a message from ann@rcpt.example to rcpt over SMTP.
func receive(t *testing.T, n *node, rcpt, subject string) {
	t.Helper()
	raw := "From: Ann <ann@rcpt.example>\r\nTo: " + rcpt + "\r\nSubject: " + subject + "\r\nMessage-ID: <" + strings.ReplaceAll(subject, " ", ".") + "@rcpt.example>\r\n" +
		"Date: Tue, 24 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain\r\n\r\nWhere is my parcel?\r\n"
	c, err := smtp.Dial(n.SMTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SendMail("ann@rcpt.example", []string{rcpt}, strings.NewReader(raw)); err != nil {
		t.Fatalf("receiving %q: %v", subject, err)
	}
}

func TestToolsListed(t *testing.T) {
	n := setup(t)
	cs := connect(t, n.URL, n.Key)
	want := []string{"forward", "get_email", "list_emails", "list_suppressions", "list_threads", "read_received", "read_thread", "reply", "search_received", "send_email"}
	var got []string
	required := map[string][]string{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tool.Name)
		var schema struct {
			Required []string `json:"required"`
		}
		b, _ := json.Marshal(tool.InputSchema)
		_ = json.Unmarshal(b, &schema)
		required[tool.Name] = schema.Required
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if r := required["send_email"]; !slices.Equal(r, []string{"from", "to", "subject"}) {
		t.Fatalf("send_email requires %v, want from, to, subject (derived from its input struct)", r)
	}
	// The SDK checks arguments against the schema before the API is called.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": []string{"a@rcpt.example"}, "subject": "s"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "from") {
		t.Fatalf("send_email without from: %v %+v", err, res)
	}
}

// TestSendEmailReachesTheRecipient: send_email is POST /v1/emails: the
// message arrives at the recipient's MX, get_email and list_emails show it
// with its events, and scheduled_at books it instead.
func TestSendEmailReachesTheRecipient(t *testing.T) {
	n := setup(t)
	cs := connect(t, n.URL, n.Key)
	sent := ok(t, cs, "send_email", map[string]any{"from": "Acme <news@acme.example>", "to": []string{"ann@rcpt.example"},
		"subject": "Your parcel", "text": "It ships today."})
	id, _ := sent["id"].(string)
	if id == "" {
		t.Fatalf("send_email answered %v, want the email's id", sent)
	}
	msgs := n.sink.WaitFor(1, 15*time.Second)
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), "Subject: Your parcel") || msgs[0].To[0] != "ann@rcpt.example" {
		t.Fatalf("the sink got %d messages: %+v", len(msgs), msgs)
	}
	testapp.Eventually(t, 15*time.Second, func() bool {
		return ok(t, cs, "get_email", map[string]any{"id": id})["status"] == "delivered"
	}, "get_email shows the delivery")
	email := ok(t, cs, "get_email", map[string]any{"id": id})
	if evs, _ := email["events"].([]any); len(evs) < 2 {
		t.Fatalf("get_email has events %v, want the email's timeline", email["events"])
	}
	list := ok(t, cs, "list_emails", map[string]any{"limit": 10})
	if data, _ := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != id {
		t.Fatalf("list_emails: %v", list)
	}

	// dry_run answers the preflight and sends nothing.
	dry := ok(t, cs, "send_email", map[string]any{"from": "Acme <news@acme.example>", "to": []string{"cy@rcpt.example"},
		"subject": "Just checking", "html": "<p><img src=\"https://acme.example/a.png\"></p>", "dry_run": true})
	if dry["object"] != "preflight" || dry["would_send"] != true || dry["id"] != nil {
		t.Fatalf("a dry run answered %v", dry)
	}
	if n := len(ok(t, cs, "list_emails", map[string]any{"limit": 10})["data"].([]any)); n != 1 {
		t.Fatalf("a dry run stored an email: %d listed", n)
	}

	later := ok(t, cs, "send_email", map[string]any{"from": "news@acme.example", "to": []string{"bob@rcpt.example"},
		"subject": "Later", "html": "<p>later</p>", "scheduled_at": "in 1 hour"})
	if got := ok(t, cs, "get_email", map[string]any{"id": later["id"]}); got["status"] != "scheduled" {
		t.Fatalf("a scheduled send reads %v", got)
	}
}

// TestReceivedMailTools: search, read, threads, reply and forward over the
// mailbox routes; reply and forward leave from the mailbox, to the sink.
func TestReceivedMailTools(t *testing.T) {
	n := setup(t)
	cs := connect(t, n.URL, n.Key)
	receive(t, n, n.inbox, "Parcel question")

	listed := ok(t, cs, "search_received", map[string]any{"unread_only": true})
	msgs, _ := listed["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("search_received without a query: %v", listed)
	}
	msg := msgs[0].(map[string]any)
	id, thread := msg["id"].(string), msg["thread_id"].(string)
	hits, _ := ok(t, cs, "search_received", map[string]any{"query": "parcel"})["hits"].([]any)
	if len(hits) != 1 || hits[0].(map[string]any)["message_id"] != id {
		t.Fatalf("search_received parcel: %v", hits)
	}
	if m := ok(t, cs, "read_received", map[string]any{"id": id}); m["text"] != "Where is my parcel?\r\n" && m["text"] != "Where is my parcel?\n" && m["text"] != "Where is my parcel?" {
		t.Fatalf("read_received: text %q", m["text"])
	}
	if ts, _ := ok(t, cs, "list_threads", nil)["threads"].([]any); len(ts) != 1 || ts[0].(map[string]any)["id"] != thread {
		t.Fatalf("list_threads: %v", ts)
	}

	ok(t, cs, "reply", map[string]any{"message_id": id, "text": "It ships **today**."})
	got := n.sink.WaitFor(1, 15*time.Second)
	if len(got) != 1 || got[0].To[0] != "ann@rcpt.example" || !strings.Contains(string(got[0].Data), "Subject: Re: Parcel question") ||
		!strings.Contains(string(got[0].Data), "In-Reply-To: <Parcel.question@rcpt.example>") {
		t.Fatalf("the reply: %+v", got)
	}
	ok(t, cs, "forward", map[string]any{"message_id": id, "to": []string{"bob@rcpt.example"}, "text": "FYI"})
	got = n.sink.WaitFor(2, 15*time.Second)
	if len(got) != 2 || got[1].To[0] != "bob@rcpt.example" || !strings.Contains(string(got[1].Data), "Subject: Fwd: Parcel question") {
		t.Fatalf("the forward: %+v", got)
	}
	th := ok(t, cs, "read_thread", map[string]any{"id": thread})
	if ms, _ := th["messages"].([]any); len(ms) < 2 {
		t.Fatalf("read_thread holds %v, want the message and the reply", th)
	}
}

// apiError is the error the API itself answers key for method path.
func apiError(t *testing.T, a *testapp.App, key, method, path string) (status float64, code, message string) {
	t.Helper()
	r := a.DoKey(key, method, path, nil)
	var nested struct {
		Error struct{ Code, Message string }
	}
	var flat struct{ Error, Message string }
	if json.Unmarshal(r.Body, &flat) == nil && flat.Error != "" {
		return float64(r.Status), flat.Error, flat.Message
	}
	r.Decode(t, &nested)
	return float64(r.Status), nested.Error.Code, nested.Error.Message
}

// TestToolsAreRefusedAsTheAPIRefuses: a tool can do what its key may do
// and nothing more, and the refusal is the API's own code and message.
func TestToolsAreRefusedAsTheAPIRefuses(t *testing.T) {
	n := setup(t)
	receive(t, n, n.inbox, "For the inbox")
	var list struct {
		Messages []struct {
			ID       string `json:"id"`
			ThreadID string `json:"thread_id"`
		} `json:"messages"`
	}
	n.Do("GET", "/v1/messages", nil).Decode(t, &list)
	inboxMsg := list.Messages[0]

	var sendOnly struct{ Key string }
	n.Do("POST", "/v1/api-keys", map[string]any{"name": "agent", "scopes": []string{"mail:send"}}).Decode(t, &sendOnly)
	var support struct{ ID string }
	n.Do("POST", "/v1/mailboxes", map[string]any{"local_part": "support"}).Decode(t, &support)
	var bound struct{ Key string }
	n.Do("POST", "/v1/api-keys", map[string]any{"name": "support agent", "mailbox_id": support.ID}).Decode(t, &bound)
	if sendOnly.Key == "" || bound.Key == "" {
		t.Fatal("keys not made")
	}

	for _, c := range []struct {
		name, key, tool string
		args            map[string]any
		method, path    string
		status          float64
	}{
		{"a send-only key lists suppressions", sendOnly.Key, "list_suppressions", nil, "GET", "/v1/suppressions", 403},
		{"a send-only key reads received mail", sendOnly.Key, "search_received", nil, "GET", "/v1/messages", 403},
		{"a bound key reads another mailbox's message", bound.Key, "read_received", map[string]any{"id": inboxMsg.ID}, "GET", "/v1/messages/" + inboxMsg.ID, 404},
		{"a bound key reads another mailbox's thread", bound.Key, "read_thread", map[string]any{"id": inboxMsg.ThreadID}, "GET", "/v1/threads/" + inboxMsg.ThreadID, 404},
		{"a bound key replies from another mailbox", bound.Key, "reply", map[string]any{"message_id": inboxMsg.ID, "text": "hi"}, "GET", "/v1/messages/" + inboxMsg.ID, 404},
		{"a bound key lists another mailbox", bound.Key, "search_received", map[string]any{"mailbox_id": n.inboxID}, "GET", "/v1/messages?mailbox_id=" + n.inboxID, 404},
		{"a bound key lists another mailbox's threads", bound.Key, "list_threads", map[string]any{"mailbox_id": n.inboxID}, "GET", "/v1/threads?mailbox_id=" + n.inboxID, 404},
		{"a bound key lists suppressions", bound.Key, "list_suppressions", nil, "GET", "/v1/suppressions", 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := connect(t, n.URL, c.key)
			got, failed := call(t, cs, c.tool, c.args)
			status, code, message := apiError(t, n.App.For(t), c.key, c.method, c.path)
			if !failed || got["status"] != status || got["code"] != code || got["message"] != message || status != c.status {
				t.Fatalf("tool answered %v (error %v); the API answers %v %s %q, want %v", got, failed, status, code, message, c.status)
			}
		})
	}

	// The bound key's own mailbox works through the same tools.
	cs := connect(t, n.URL, bound.Key)
	if ms, _ := ok(t, cs, "search_received", nil)["messages"].([]any); len(ms) != 0 {
		t.Fatalf("the bound key sees %v in its empty mailbox", ms)
	}
	if _, failed := call(t, cs, "send_email", map[string]any{"from": n.inbox, "to": []string{"ann@rcpt.example"}, "subject": "s", "text": "t"}); !failed {
		t.Fatal("a bound key sent as another mailbox")
	}
}

// TestIDsStayInTheirRoute: an id is one path segment, so "../api-keys"
// is a message the API does not know, never the key list.
func TestIDsStayInTheirRoute(t *testing.T) {
	n := setup(t)
	cs := connect(t, n.URL, n.Key)
	if got, failed := call(t, cs, "read_received", map[string]any{"id": "../api-keys"}); !failed || got["code"] != "not_found" {
		t.Fatalf("read_received ../api-keys: %v", got)
	}
	for _, id := range []string{"..", " ", "."} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_thread", Arguments: map[string]any{"id": id}})
		if err != nil || !res.IsError || res.StructuredContent != nil {
			t.Fatalf("read_thread %q: %v %+v, want refused before any call", id, err, res)
		}
	}
}

// TestNodeOutOfReach: a node that does not answer is the tool's error,
// not the session's.
func TestNodeOutOfReach(t *testing.T) {
	cs := connect(t, "http://127.0.0.1:1", "mr_anything")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_emails", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "GET /v1/emails") {
		t.Fatalf("list_emails with no node: %v %+v", err, res)
	}
	for _, o := range []mcpserver.Options{{URL: "127.0.0.1:8080", APIKey: "k"}, {URL: "http://127.0.0.1:8080"}} {
		if _, err := mcpserver.New(o); err == nil {
			t.Fatalf("New(%+v) accepted", o)
		}
	}
}
