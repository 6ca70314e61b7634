package topics_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"mailroom/internal/dnsresolve"
)

// delivered is one message as the sink received it: its one envelope
// recipient, List-Unsubscribe's https link, and its html and text parts.
type delivered struct {
	rcpt, oneClick, html, text string
}

func readDelivered(t *testing.T, rcpts []string, data []byte) delivered {
	t.Helper()
	if len(rcpts) != 1 {
		t.Fatalf("a topic message went to %v; each recipient gets its own", rcpts)
	}
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	d := delivered{rcpt: rcpts[0]}
	links := angle.FindAllStringSubmatch(m.Header.Get("List-Unsubscribe"), -1)
	if len(links) == 0 || m.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("%s: unsubscribe headers %v", d.rcpt, m.Header)
	}
	d.oneClick = links[0][1]
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p) // quoted-printable is decoded by NextPart
		if strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			d.html = string(b)
		} else {
			d.text = string(b)
		}
	}
	return d
}

// TestTopicSendToTwoRecipients (#45 item 1, #40 item 1): a template send
// with a topic to two recipients delivers one message to each, each signed,
// whose List-Unsubscribe and {{ unsubscribe_url }} / {{ preferences_url }}
// are that recipient's own. One-click posted as the second recipient, as a
// mailbox provider does, switches the topic off for the second only.
func TestTopicSendToTwoRecipients(t *testing.T) {
	n := startNode(t)
	n.mustDo(t, "POST", "/v1/topics", map[string]any{"name": "Product news", "key": "news"}, 201)
	tpl := n.mustDo(t, "POST", "/v1/templates", map[string]any{"name": "News", "subject": "News", "publish": true,
		"html": `<body><p>Hello</p><a href="{{ unsubscribe_url }}">Unsubscribe</a> <a href="{{ preferences_url }}">Preferences</a></body>`,
		"text": "Hello\nUnsubscribe: {{ unsubscribe_url }}\nPreferences: {{{ preferences_url }}}\n"}, 201)
	n.mustDo(t, "POST", "/v1/emails", map[string]any{"from": "Acme <news@acme.example>", "to": []string{"ann@rcpt.example", "Bob <Bob@rcpt.example>"},
		"topic": "news", "template": map[string]any{"id": tpl["id"]}}, 200)

	msgs := n.sink.WaitFor(2, 15*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("sink got %d messages, want one per recipient", len(msgs))
	}
	resolver := dnsresolve.New(n.dns.Addr())
	got := map[string]delivered{}
	for _, m := range msgs {
		verifs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{
			LookupTXT: func(name string) ([]string, error) { return resolver.LookupTXT(context.Background(), name) },
		})
		if err != nil || len(verifs) != 1 || verifs[0].Err != nil {
			t.Fatalf("DKIM: %v %+v", err, verifs)
		}
		d := readDelivered(t, m.To, m.Data)
		got[strings.ToLower(d.rcpt)] = d
	}
	ann, bob := got["ann@rcpt.example"], got["bob@rcpt.example"]
	if ann.oneClick == "" || bob.oneClick == "" || ann.oneClick == bob.oneClick {
		t.Fatalf("one-click links: ann %q, bob %q", ann.oneClick, bob.oneClick)
	}
	for _, d := range []delivered{ann, bob} {
		if !strings.Contains(d.html, `href="`+d.oneClick+`"`) || !strings.Contains(d.text, "Unsubscribe: "+d.oneClick) {
			t.Errorf("%s: the body's link is not the header's %s:\n%s\n%s", d.rcpt, d.oneClick, d.html, d.text)
		}
		if strings.Contains(d.html, "{{") || strings.Contains(d.text, "{{") || !strings.Contains(d.text, "Preferences: "+n.Config.PublicURL+"/preferences/") {
			t.Errorf("%s: a mark is left or the preference link is missing:\n%s\n%s", d.rcpt, d.html, d.text)
		}
	}
	if strings.Contains(ann.html+ann.text, bob.oneClick) || strings.Contains(bob.html+bob.text, ann.oneClick) {
		t.Fatal("a recipient's message carries the other's link")
	}

	// Bob's mailbox provider posts one-click (RFC 8058) for Bob.
	p, err := http.Post(n.local(bob.oneClick), "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	p.Body.Close()
	if p.StatusCode != 200 {
		t.Fatalf("one-click: %d", p.StatusCode)
	}
	if n.subscribed(t, "bob@rcpt.example", "news") || !n.subscribed(t, "ann@rcpt.example", "news") {
		t.Fatalf("after Bob's one-click: bob subscribed %v, ann subscribed %v (want false, true)",
			n.subscribed(t, "bob@rcpt.example", "news"), n.subscribed(t, "ann@rcpt.example", "news"))
	}
}
