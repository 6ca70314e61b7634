package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestLargeBodyRoundTrip: an email whose bodies and attachment are stored
// apart from its row (over sending's bodyApartOver) reaches the receiving
// server whole and DKIM-signed, beside a small one stored inline, and both
// end delivered.
func TestLargeBodyRoundTrip(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink),
		testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"),
	)
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)

	html := "<p>" + strings.Repeat("Large body, word by word. ", 400) + "END-OF-HTML</p>"
	text := strings.Repeat("Plain words. ", 300) + "END-OF-TEXT"
	att := bytes.Repeat([]byte("attachment bytes "), 200)
	large := map[string]any{"from": "news@acme.example", "to": []string{"big@rcpt.example"}, "subject": "Large", "html": html, "text": text,
		"attachments": []map[string]any{{"filename": "notes.txt", "content": base64.StdEncoding.EncodeToString(att)}}}
	small := map[string]any{"from": "news@acme.example", "to": []string{"small@rcpt.example"}, "subject": "Small", "text": "tiny END-OF-SMALL"}
	ids := map[string]string{}
	for name, body := range map[string]map[string]any{"large": large, "small": small} {
		r := a.Do("POST", "/v1/emails", body)
		if r.Status != 200 {
			t.Fatalf("send %s: %d %s", name, r.Status, r.Body)
		}
		ids[name] = r.JSON()["id"].(string)
	}

	msgs := sink.WaitFor(2, 15*time.Second)
	if len(msgs) != 2 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	resolver := dnsresolve.New(dns.Addr())
	for _, m := range msgs {
		verifs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{
			LookupTXT: func(name string) ([]string, error) { return resolver.LookupTXT(context.Background(), name) },
		})
		if err != nil || len(verifs) != 1 || verifs[0].Err != nil {
			t.Fatalf("DKIM for %v: %v %+v", m.To, err, verifs)
		}
		if _, err := mail.ReadMessage(bytes.NewReader(m.Data)); err != nil {
			t.Fatal(err)
		}
		flat := strings.NewReplacer("=\r\n", "", "\r\n", "").Replace(string(m.Data))
		switch m.To[0] {
		case "big@rcpt.example":
			if !strings.Contains(flat, "END-OF-HTML") || !strings.Contains(flat, "END-OF-TEXT") || !strings.Contains(flat, base64.StdEncoding.EncodeToString(att)[:64]) {
				t.Fatalf("the large message lost a part:\n%.2000s", m.Data)
			}
		case "small@rcpt.example":
			if !strings.Contains(flat, "END-OF-SMALL") {
				t.Fatalf("the small message lost its body:\n%s", m.Data)
			}
		}
	}
	for name, id := range ids {
		testapp.Eventually(t, 15*time.Second, func() bool {
			return a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"] == "delivered"
		}, "the %s email %s never delivered", name, id)
	}
}
