package submission_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/mail"
	"net/smtp"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// submitted is a message as a mailing tool writes it: its own Message-ID
// and list headers, an html body showing an inline image by cid:, and a
// file. extra goes into the header.
func submitted(subject, extra string) string {
	return "From: Acme News <news@acme.example>\r\nTo: bob@rcpt.example\r\nSubject: " + subject + "\r\n" +
		"Message-ID: <campaign-7.bob@acme.example>\r\n" + extra +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=outer\r\n\r\n" +
		"--outer\r\nContent-Type: multipart/related; boundary=rel; type=\"text/html\"\r\n\r\n" +
		"--rel\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Hello <img src=\"cid:logo.1@acme.example\" alt=\"logo\"></p>\r\n" +
		"--rel\r\nContent-Type: image/png\r\nContent-ID: <logo.1@acme.example>\r\nContent-Disposition: inline; filename=\"logo.png\"\r\n" +
		"Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==\r\n" +
		"--rel--\r\n" +
		"--outer\r\nContent-Type: text/csv\r\nContent-Disposition: attachment; filename=\"list.csv\"\r\n\r\na,b\r\n" +
		"--outer--\r\n"
}

// TestSubmitKeepsListHeaders: a message submitted over SMTP keeps the
// client's list headers (signed by DKIM), its Message-ID while the
// workspace has not used it, and its inline image in multipart/related;
// X-Mailroom-Topic gives it the topic's one-click List-Unsubscribe instead
// of its own, and is not delivered. Read from the SMTP sink with net/mail,
// the DKIM verifier and Python's email parser.
func TestSubmitKeepsListHeaders(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	a := start(t, testapp.WithMX(dns, sink))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	if r := a.Do("POST", "/v1/topics", map[string]any{"name": "Product news", "key": "news"}); r.Status != 201 {
		t.Fatalf("topic: %d %s", r.Status, r.Body)
	}
	_, port, _ := net.SplitHostPort(a.SubmissionAddr())
	submit := func(msg string) error {
		return smtp.SendMail("localhost:"+port, smtp.PlainAuth("", "tool", a.Key, "localhost"), "news@acme.example", []string{"bob@rcpt.example"}, []byte(msg))
	}
	lists := "List-Id: Acme news <news.acme.example>\r\nList-Unsubscribe: <https://acme.example/u/7>, <mailto:leave@acme.example>\r\n" +
		"List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\nList-Help: <https://acme.example/help>\r\n"
	if err := submit(submitted("Own lists", lists)); err != nil {
		t.Fatalf("first: %v", err)
	}
	// The same Message-ID again: the workspace has used it, so a new one.
	if err := submit(submitted("With topic", lists+"X-Mailroom-Topic: news\r\n")); err != nil {
		t.Fatalf("second: %v", err)
	}
	if err := submit(submitted("Unknown topic", "X-Mailroom-Topic: nope\r\n")); err == nil || !strings.Contains(err.Error(), "topic_not_found") {
		t.Fatalf("unknown topic: %v", err)
	}
	msgs := sink.WaitFor(2, 20*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	bySubject := map[string][]byte{}
	for _, m := range msgs {
		h, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		bySubject[h.Header.Get("Subject")] = m.Data
	}
	resolver := dnsresolve.New(dns.Addr())
	read := func(raw []byte) (mail.Header, string) {
		t.Helper()
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		verifs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{
			LookupTXT: func(name string) ([]string, error) { return resolver.LookupTXT(context.Background(), name) },
		})
		if err != nil || len(verifs) != 1 || verifs[0].Err != nil {
			t.Fatalf("DKIM: %v %+v", err, verifs)
		}
		return m.Header, ":" + strings.ToLower(strings.Join(verifs[0].HeaderKeys, ":")) + ":"
	}

	own, signed := read(bySubject["Own lists"])
	for k, want := range map[string]string{
		"Message-ID": "<campaign-7.bob@acme.example>", "List-Id": "Acme news <news.acme.example>",
		"List-Unsubscribe":      "<https://acme.example/u/7>, <mailto:leave@acme.example>",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click", "List-Help": "<https://acme.example/help>",
	} {
		if got := own.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
		if k != "Message-ID" && !strings.Contains(signed, ":"+strings.ToLower(k)+":") {
			t.Errorf("%s is not in DKIM h= %s", k, signed)
		}
	}
	inlineImage(t, bySubject["Own lists"])

	topic, signed := read(bySubject["With topic"])
	if id := topic.Get("Message-ID"); id == "<campaign-7.bob@acme.example>" || !strings.HasSuffix(id, "@acme.example>") {
		t.Errorf("a reused Message-ID was kept: %q", id)
	}
	if topic.Get("X-Mailroom-Topic") != "" || topic.Get("List-Id") != "Acme news <news.acme.example>" {
		t.Errorf("topic header delivered, or List-Id lost: %v", topic)
	}
	links := regexp.MustCompile(`<([^>]+)>`).FindAllStringSubmatch(topic.Get("List-Unsubscribe"), -1)
	if len(links) != 2 || !strings.HasPrefix(links[0][1], a.Config.PublicURL+"/unsubscribe/") || topic.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("topic's List-Unsubscribe %q", topic.Get("List-Unsubscribe"))
	}
	if len(topic["List-Unsubscribe"]) != 1 || !strings.Contains(signed, ":list-unsubscribe:") || !strings.Contains(signed, ":list-unsubscribe-post:") {
		t.Fatalf("List-Unsubscribe %q, h= %s", topic["List-Unsubscribe"], signed)
	}
	inlineImage(t, bySubject["With topic"])
	// The one-click POST, as a mailbox provider makes it, unsubscribes bob.
	p, err := http.Post(a.URL+strings.TrimPrefix(links[0][1], a.Config.PublicURL), "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	p.Body.Close()
	r := a.Do("POST", "/v1/topics/preferences", map[string]any{"email": "bob@rcpt.example", "topic": "news"})
	if p.StatusCode != 200 || strings.Contains(string(r.Body), `"subscribed":true`) {
		t.Fatalf("one-click: %d; preferences %s", p.StatusCode, r.Body)
	}
}

// inlineImage checks, with Python's email parser (policy=default), that
// the image sits in a multipart/related beside the html, inline, with its
// Content-ID, and the csv is an attachment; no defects anywhere.
func inlineImage(t *testing.T, raw []byte) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Log("python3 is not installed: the MIME structure is not checked")
		return
	}
	cmd := exec.Command(py, "-c", `import email, json, sys
from email import policy
m = email.message_from_bytes(sys.stdin.buffer.read(), policy=policy.default)
out = {"defects": [type(d).__name__ for p in m.walk() for d in p.defects]}
def walk(p, parent):
    if p.is_multipart():
        for c in p.iter_parts():
            walk(c, p.get_content_type())
    else:
        out[p.get_content_type()] = {"parent": parent, "cid": p["Content-ID"], "disposition": p.get_content_disposition(),
            "html_cid": "cid:logo.1@acme.example" in (p.get_content() if p.get_content_maintype() == "text" else "")}
walk(m, "")
print(json.dumps(out))`)
	cmd.Stdin = bytes.NewReader(raw)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v %s", err, b)
	}
	type part struct {
		Parent, CID, Disposition string
		HTMLCID                  bool `json:"html_cid"`
	}
	var got struct {
		Defects []string
		PNG     part `json:"image/png"`
		HTML    part `json:"text/html"`
		CSV     part `json:"text/csv"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("python3 said %s", b)
	}
	if len(got.Defects) > 0 || got.PNG.Parent != "multipart/related" || got.PNG.CID != "<logo.1@acme.example>" || got.PNG.Disposition != "inline" ||
		!got.HTML.HTMLCID || got.CSV.Disposition != "attachment" {
		t.Fatalf("structure %s", b)
	}
}
