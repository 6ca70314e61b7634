package topics_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/mail"
	"net/smtp"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/wait"
)

// node is a running node with a verified domain acme.example whose mail
// for rcpt.example lands in sink.
type node struct {
	*testapp.App
	sink *smtpsink.Sink
	dns  *dnstest.Server
}

func startNode(t *testing.T) *node {
	t.Helper()
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink),
		testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"),
	)
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	return &node{App: a, sink: sink, dns: dns}
}

func (n *node) mustDo(t *testing.T, method, path string, body any, want int) map[string]any {
	t.Helper()
	r := n.Do(method, path, body)
	if r.Status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
	}
	return r.JSON()
}

// local turns a link under MAILROOM_PUBLIC_URL into one on the test node.
func (n *node) local(link string) string {
	return n.URL + strings.TrimPrefix(link, n.Config.PublicURL)
}

func (n *node) subscribed(t *testing.T, email, topic string) bool {
	t.Helper()
	p := n.mustDo(t, "POST", "/v1/topics/preferences", map[string]any{"email": email, "topic": topic}, 200)
	return p["preferences"].([]any)[0].(map[string]any)["subscribed"].(bool)
}

var angle = regexp.MustCompile(`<([^>]+)>`)

// TestSendWithTopic: the message carries both unsubscribe headers, signed
// by DKIM; the one-click POST unsubscribes with a 200, after which the
// same send answers topic_opt_out and nothing more is delivered.
func TestSendWithTopic(t *testing.T) {
	n := startNode(t)
	n.mustDo(t, "POST", "/v1/topics", map[string]any{"name": "Product news", "key": "news"}, 201)
	n.mustDo(t, "POST", "/v1/topics", map[string]any{"name": "Account", "key": "account", "required": true}, 201)
	n.mustDo(t, "POST", "/v1/topics", map[string]any{"name": "Tips", "key": "tips", "default_opt_in": false}, 201)
	send := func(topic string, extra ...any) *testapp.Response {
		body := map[string]any{"from": "Acme <news@acme.example>", "to": []string{"Bob <bob@rcpt.example>"}, "subject": "News", "html": "<p>Hi</p>", "topic": topic}
		for i := 0; i+1 < len(extra); i += 2 {
			body[extra[i].(string)] = extra[i+1]
		}
		return n.Do("POST", "/v1/emails", body)
	}
	for _, c := range []struct {
		name, topic string
		extra       []any
		status      int
		code        string
	}{
		{"unknown topic", "nope", nil, 404, "topic_not_found"},
		{"off by default", "tips", nil, 422, "topic_opt_out"},
		{"CR LF in topic", "news\r\nBcc: evil@rcpt.example", nil, 400, "invalid_request"},
		{"own List-Unsubscribe with a topic", "news", []any{"headers", map[string]string{"List-Unsubscribe": "<https://evil.example>"}}, 400, "reserved_header"},
	} {
		r := send(c.topic, c.extra...)
		if r.Status != c.status || r.ErrCode() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
	}
	// A batch entry fails alone.
	r := n.Do("POST", "/v1/emails/batch", map[string]any{"emails": []any{
		map[string]any{"from": "news@acme.example", "to": "bob@rcpt.example", "subject": "s", "text": "t", "topic": "nope"}}})
	if r.Status != 207 || !strings.Contains(string(r.Body), "topic_not_found") {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}

	if r := send("news"); r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	msgs := n.sink.WaitFor(1, 15*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	m, err := mail.ReadMessage(bytes.NewReader(msgs[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	lu, lup := m.Header.Get("List-Unsubscribe"), m.Header.Get("List-Unsubscribe-Post")
	if lup != "List-Unsubscribe=One-Click" {
		t.Fatalf("List-Unsubscribe-Post %q", lup)
	}
	links := angle.FindAllStringSubmatch(lu, -1)
	if len(links) != 2 || !strings.HasPrefix(links[0][1], n.Config.PublicURL+"/unsubscribe/") || !strings.HasPrefix(links[1][1], "mailto:unsubscribe@mailroom.test?subject=") {
		t.Fatalf("List-Unsubscribe %q", lu)
	}
	resolver := dnsresolve.New(n.dns.Addr())
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(msgs[0].Data), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) { return resolver.LookupTXT(context.Background(), name) },
	})
	if err != nil || len(verifs) != 1 || verifs[0].Err != nil {
		t.Fatalf("DKIM: %v %+v", err, verifs)
	}
	signed := strings.ToLower(strings.Join(verifs[0].HeaderKeys, ":"))
	if !strings.Contains(signed, "list-unsubscribe:") || !strings.Contains(signed, "list-unsubscribe-post") {
		t.Fatalf("DKIM h= %s lacks the unsubscribe headers", signed)
	}

	// A GET (a link scanner) changes nothing; the RFC 8058 POST does.
	oneClick := n.local(links[0][1])
	g, err := http.Get(oneClick)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(g.Body)
	g.Body.Close()
	if g.StatusCode != 200 || !strings.Contains(string(page), "Product news") || !n.subscribed(t, "bob@rcpt.example", "news") {
		t.Fatalf("GET: %d, still subscribed %v: %s", g.StatusCode, n.subscribed(t, "bob@rcpt.example", "news"), page)
	}
	p, err := http.Post(oneClick, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	p.Body.Close()
	if p.StatusCode != 200 || n.subscribed(t, "bob@rcpt.example", "news") {
		t.Fatalf("one-click POST: %d, subscribed %v", p.StatusCode, n.subscribed(t, "bob@rcpt.example", "news"))
	}
	if r := send("news"); r.Status != 422 || r.ErrCode() != "topic_opt_out" {
		t.Fatalf("send after unsubscribe: %d %s", r.Status, r.Body)
	}
	// A required topic is always sent and carries no unsubscribe headers.
	if r := send("account"); r.Status != 200 {
		t.Fatalf("required topic: %d %s", r.Status, r.Body)
	}
	msgs = n.sink.WaitFor(2, 15*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("required topic: %d messages", len(msgs))
	}
	if m2, err := mail.ReadMessage(bytes.NewReader(msgs[1].Data)); err != nil || m2.Header.Get("List-Unsubscribe") != "" {
		t.Fatalf("required topic message: %v %v", err, m2.Header)
	}

	// Tampered: a clear 400 page, nothing changed.
	n.mustDo(t, "POST", "/v1/topics/preferences", map[string]any{"email": "bob@rcpt.example", "topic": "news", "subscribed": true}, 200)
	bad := oneClick[:len(oneClick)-3] + "AAA"
	p, err = http.Post(bad, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(p.Body)
	p.Body.Close()
	if p.StatusCode != 400 || !strings.Contains(string(page), "not valid") || !n.subscribed(t, "bob@rcpt.example", "news") {
		t.Fatalf("tampered POST: %d %s", p.StatusCode, page)
	}

	// The mailto form: mail to the unsubscribe address with the link's
	// subject, through the node's own SMTP listener.
	mt, err := url.Parse(links[1][1])
	if err != nil {
		t.Fatal(err)
	}
	subject := mt.Query().Get("subject")
	raw := "From: bob@rcpt.example\r\nTo: " + mt.Opaque + "\r\nSubject: " + subject + "\r\n\r\nunsubscribe\r\n"
	if err := smtp.SendMail(n.SMTPAddr(), nil, "bob@rcpt.example", []string{mt.Opaque}, []byte(raw)); err != nil {
		t.Fatalf("mailto unsubscribe: %v", err)
	}
	if n.subscribed(t, "bob@rcpt.example", "news") {
		t.Fatal("mailto unsubscribe changed nothing")
	}
	// A forged subject is accepted (no backscatter) and changes nothing.
	n.mustDo(t, "POST", "/v1/topics/preferences", map[string]any{"email": "bob@rcpt.example", "topic": "news", "subscribed": true}, 200)
	raw = "From: x@rcpt.example\r\nSubject: unsubscribe forged.AAAA\r\n\r\nx\r\n"
	if err := smtp.SendMail(n.SMTPAddr(), nil, "x@rcpt.example", []string{mt.Opaque}, []byte(raw)); err != nil {
		t.Fatalf("forged mailto: %v", err)
	}
	if !n.subscribed(t, "bob@rcpt.example", "news") {
		t.Fatal("a forged mailto unsubscribed")
	}
}

// TestScheduledSendRechecksTopic: a send booked with a topic is checked
// again when it is due. Bob switches the topic off and the "promo" topic is
// archived after booking: those two emails fail with email.bounced
// (topic_opt_out, topic_archived) and never reach the sink; Dave, still
// subscribed, gets his.
func TestScheduledSendRechecksTopic(t *testing.T) {
	n := startNode(t)
	n.mustDo(t, "POST", "/v1/topics", map[string]any{"name": "Product news", "key": "news"}, 201)
	promo := n.mustDo(t, "POST", "/v1/topics", map[string]any{"name": "Promotions", "key": "promo"}, 201)
	at := time.Now().UTC().Add(3 * time.Second).Format(time.RFC3339Nano)
	book := func(to, topic string) string {
		return n.mustDo(t, "POST", "/v1/emails", map[string]any{"from": "news@acme.example", "to": to, "subject": "Soon",
			"text": "hello " + to, "topic": topic, "send_at": at}, 202)["id"].(string)
	}
	optedOut, archived, kept := book("bob@rcpt.example", "news"), book("carol@rcpt.example", "promo"), book("dave@rcpt.example", "news")
	n.mustDo(t, "POST", "/v1/topics/preferences", map[string]any{"email": "bob@rcpt.example", "topic": "news", "subscribed": false}, 200)
	n.mustDo(t, "DELETE", "/v1/topics/"+promo["id"].(string), nil, 200)

	msgs := n.sink.WaitFor(1, 15*time.Second)
	if len(msgs) != 1 || !strings.Contains(strings.Join(msgs[0].To, ","), "dave@rcpt.example") {
		t.Fatalf("sink: %d messages %+v", len(msgs), msgs)
	}
	for _, c := range []struct{ id, subtype string }{{optedOut, "topic_opt_out"}, {archived, "topic_archived"}} {
		var e map[string]any
		wait.Until(10*time.Second, func() bool {
			e = n.mustDo(t, "GET", "/v1/emails/"+c.id, nil, 200)
			return e["status"] != "scheduled"
		})
		if e["status"] != "failed" || !strings.HasPrefix(e["last_error"].(string), c.subtype+": ") || e["last_event"] != "email.bounced" {
			t.Fatalf("%s: %v", c.subtype, e)
		}
		var bounced map[string]any
		for _, ev := range e["events"].([]any) {
			if ev := ev.(map[string]any); ev["type"] == "email.bounced" {
				bounced = ev["data"].(map[string]any)
			}
		}
		if bounced == nil || bounced["bounce_subtype"] != c.subtype || bounced["bounce_type"] != "hard" {
			t.Fatalf("%s: events %v", c.subtype, e["events"])
		}
	}
	if e := n.mustDo(t, "GET", "/v1/emails/"+kept, nil, 200); e["status"] == "failed" || e["status"] == "scheduled" {
		t.Fatalf("kept: %v", e)
	}
	if got := n.sink.WaitFor(2, time.Second); len(got) != 1 {
		t.Fatalf("sink got %d messages, want only Dave's", len(got))
	}
}
