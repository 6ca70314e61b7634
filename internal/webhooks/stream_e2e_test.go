package webhooks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/webhooks"
)

// sse is one server-sent event as a client reads it.
type sse struct {
	id, event, data string
}

// sseClient reads a stream with a real HTTP client, one event at a time.
type sseClient struct {
	t      *testing.T
	resp   *http.Response
	events chan sse
	done   chan error
}

// openStream GETs /v1/events/stream with key, query and Last-Event-ID
// (when lastID is not "") and reads it in the background.
func openStream(t *testing.T, base, key, query, lastID string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/events/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("stream: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	c := &sseClient{t: t, resp: resp, events: make(chan sse, 1000), done: make(chan error, 1)}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.data != "" {
					c.events <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.data += line[6:]
			}
		}
		c.done <- sc.Err()
	}()
	return c
}

// next waits for the next event.
func (c *sseClient) next(within time.Duration) sse {
	c.t.Helper()
	select {
	case ev := <-c.events:
		return ev
	case <-time.After(within):
		c.t.Fatalf("no event within %s", within)
	}
	return sse{}
}

// envelopeOf checks an event's data is a webhook body that names it.
func envelopeOf(t *testing.T, ev sse) events.Envelope {
	t.Helper()
	var env events.Envelope
	if err := json.Unmarshal([]byte(ev.data), &env); err != nil || env.Event != ev.event || !strings.HasPrefix(env.ID, "whd_") {
		t.Fatalf("event %+v: data is not its webhook body (%v)", ev, err)
	}
	if _, err := strconv.ParseInt(ev.id, 10, 64); err != nil {
		t.Fatalf("event id %q is not a cursor", ev.id)
	}
	return env
}

// TestEventStreamCarriesASendsEvents (issue #48 item 5): an email sent to
// the sink shows on GET /v1/events/stream as email.sent then
// email.delivered, each data the webhook body; Last-Event-ID resumes after
// an event and ?since= replays; another workspace's key sees none of it.
func TestEventStreamCarriesASendsEvents(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	otherWS, otherKey := a.NewWorkspace("Other", "other@example.com")
	other := openStream(t, a.URL, otherKey, "?since=1h", "")
	live := openStream(t, a.URL, a.Key, "", "")
	testapp.Eventually(t, 5*time.Second, func() bool { return a.Webhooks().OpenStreams(a.WorkspaceID) == 1 }, "the stream never opened")

	r := a.Do("POST", "/v1/emails", map[string]any{"from": "a@acme.example", "to": []string{"bob@rcpt.example"}, "subject": "Hi", "text": "Hello"})
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	emailID := r.JSON()["id"].(string)
	sink.WaitFor(1, 15*time.Second)
	var got []sse
	for len(got) < 2 {
		ev := live.next(15 * time.Second)
		env := envelopeOf(t, ev)
		var d struct {
			EmailID string `json:"email_id"`
		}
		_ = json.Unmarshal(env.Data, &d)
		if d.EmailID != emailID {
			t.Fatalf("event of another email: %s", ev.data)
		}
		got = append(got, ev)
	}
	if got[0].event != "email.sent" || got[1].event != "email.delivered" {
		t.Fatalf("events %s, %s; want email.sent, email.delivered", got[0].event, got[1].event)
	}
	first, _ := strconv.ParseInt(got[0].id, 10, 64)
	second, _ := strconv.ParseInt(got[1].id, 10, 64)
	if second <= first {
		t.Fatalf("ids %d then %d: not increasing", first, second)
	}

	// Last-Event-ID: only what came after.
	resumed := openStream(t, a.URL, a.Key, "", got[0].id)
	if ev := resumed.next(10 * time.Second); ev.id != got[1].id || ev.data != got[1].data {
		t.Fatalf("resumed with %+v, want %+v", ev, got[1])
	}
	// ?since=: both again, the bytes unchanged.
	replayed := openStream(t, a.URL, a.Key, "?since=1h&types=email.sent,email.delivered", "")
	for _, want := range got {
		if ev := replayed.next(10 * time.Second); ev != want {
			t.Fatalf("since replayed %+v, want %+v", ev, want)
		}
	}
	// ?types= narrows.
	onlyDelivered := openStream(t, a.URL, a.Key, "?since=1h&types=email.delivered", "")
	if ev := onlyDelivered.next(10 * time.Second); ev != got[1] {
		t.Fatalf("types=email.delivered gave %+v", ev)
	}

	// The other workspace's stream, open all along, gets its own marker
	// first: nothing of the first workspace came before it.
	marker := a.RaiseEmailEvent(t, otherWS, events.EmailDelivered, "em_marker")
	if env := envelopeOf(t, other.next(10*time.Second)); env.ID != marker {
		t.Fatalf("the other workspace's stream got %s first, want its own %s", env.ID, marker)
	}
	// A bad cursor or filter is a 400, not a stream.
	for _, c := range []struct{ query, lastID string }{{"?since=yesterday", ""}, {"?types=email.opened", ""}, {"", "abc"}} {
		req, _ := http.NewRequest("GET", a.URL+"/v1/events/stream"+c.query, nil)
		req.Header.Set("Authorization", "Bearer "+a.Key)
		if c.lastID != "" {
			req.Header.Set("Last-Event-ID", c.lastID)
		}
		if r := a.Send(req); r.Status != 400 || r.ErrCode() != "invalid_request" {
			t.Fatalf("%+v: %d %s", c, r.Status, r.Body)
		}
	}
}

// TestEventStreamLimitsStreamsPerWorkspace: a workspace holds at most
// webhooks.MaxStreams streams on a node; one more is refused with a 429,
// and closing one gives its place back.
func TestEventStreamLimitsStreamsPerWorkspace(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t)
	var open []*sseClient
	for range webhooks.MaxStreams {
		open = append(open, openStream(t, a.URL, a.Key, "", ""))
	}
	req, _ := http.NewRequest("GET", a.URL+"/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	a.SkipOpenAPI = true // a flat rate_limited on a nested route
	if r := a.Send(req); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("one stream too many: %d %s", r.Status, r.Body)
	}
	open[0].resp.Body.Close()
	testapp.Eventually(t, 5*time.Second, func() bool { return a.Webhooks().OpenStreams(a.WorkspaceID) < webhooks.MaxStreams }, "a closed stream kept its place")
	openStream(t, a.URL, a.Key, "", "")
}

// TestEventStreamDropsASlowClient: a client that never reads is dropped
// once a write waits past MAILROOM_STREAM_WRITE_TIMEOUT (the node holds a
// page of events for it, never a growing queue); what it had received ends
// at a whole event, and Last-Event-ID from there resumes with the rest.
func TestEventStreamDropsASlowClient(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_STREAM_WRITE_TIMEOUT", "300ms"))
	const total = 200
	big := strings.Repeat("x", 64<<10) // 200 × 64 KiB: more than the sockets' buffers hold
	err := a.DB.InTx(context.Background(), func(tx *store.Tx) error {
		for i := range total {
			id := fmt.Sprintf("em_%d", i)
			d := events.EmailData(id, "a@acme.example", []string{"b@rcpt.example"}, big, nil, false)
			if _, err := events.Raise(context.Background(), tx, events.Event{WorkspaceID: a.WorkspaceID, EmailID: id, Type: events.EmailSent, CreatedAt: time.Now(), Data: d}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/events/stream?since=1h HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", a.Key)
	testapp.Eventually(t, 10*time.Second, func() bool { return a.Webhooks().OpenStreams(a.WorkspaceID) == 1 }, "the stream never opened")
	// Never reading, the client is dropped and its place freed.
	testapp.Eventually(t, 20*time.Second, func() bool { return a.Webhooks().OpenStreams(a.WorkspaceID) == 0 }, "the slow client was never dropped")

	// What reached it: a prefix of the events, then the connection's end.
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	var lastID, cur string // the last whole event's id; the one being read
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			cur = id
		}
		if sc.Text() == "" && cur != "" {
			lastID, cur = cur, ""
			n++
		}
	}
	if n >= total || lastID == "" {
		t.Fatalf("the slow client got %d events of %d (last id %q): it was not dropped mid-way", n, total, lastID)
	}
	// Resuming from the last whole event it read gets each of the rest once.
	rest := openStream(t, a.URL, a.Key, "", lastID)
	seen := map[string]bool{}
	for len(seen) < total-n {
		ev := rest.next(10 * time.Second)
		var env events.Envelope
		_ = json.Unmarshal([]byte(ev.data), &env)
		if seen[env.ID] {
			t.Fatalf("event %s twice", env.ID)
		}
		seen[env.ID] = true
	}
}

// TestEventStreamOfAMailboxKey: a key bound to a mailbox streams that
// mailbox's received mail, none of another mailbox's nor the workspace's
// own events: what an endpoint scoped to the mailbox would get.
func TestEventStreamOfAMailboxKey(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	var boxes []string
	for _, addr := range []string{"support@acme.example", "sales@acme.example"} {
		r := a.Do("POST", "/v1/mailboxes", map[string]any{"address": addr})
		if r.Status != 201 {
			t.Fatalf("mailbox: %d %s", r.Status, r.Body)
		}
		boxes = append(boxes, r.JSON()["id"].(string))
	}
	r := a.Do("POST", "/v1/api-keys", map[string]any{"name": "support", "scopes": []string{"workspace"}, "mailbox_id": boxes[0]})
	if r.Status != 201 {
		t.Fatalf("key: %d %s", r.Status, r.Body)
	}
	key := r.JSON()["token"].(string)
	var mine string
	err := a.DB.InTx(context.Background(), func(tx *store.Tx) error {
		for i, ev := range []events.Event{
			{Type: events.EmailReceived, MailboxID: boxes[1]},
			{Type: events.WorkspacePaused},
			{Type: events.EmailReceived, MailboxID: boxes[0]},
		} {
			ev.WorkspaceID, ev.CreatedAt, ev.Data = a.WorkspaceID, time.Now(), map[string]any{"n": i}
			raised, err := events.Raise(context.Background(), tx, ev)
			if err != nil {
				return err
			}
			mine = raised.ID
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bound := openStream(t, a.URL, key, "?since=1h", "")
	env := envelopeOf(t, bound.next(10*time.Second))
	if env.Event == events.DomainVerified { // reaches a scoped endpoint too (webhooks.MailboxScoped)
		env = envelopeOf(t, bound.next(10*time.Second))
	}
	if env.ID != mine {
		t.Fatalf("the mailbox's key got %s (%s) first, want its mailbox's %s", env.ID, env.Event, mine)
	}
}
