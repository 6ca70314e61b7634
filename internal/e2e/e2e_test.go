// Package e2e holds end-to-end tests that cross areas: a domain is added and
// verified against a real DNS server, mail is sent from it through the API,
// delivered over real SMTP with a DKIM signature that verifies against the
// published record, and its events reach a real webhook receiver, signed.
package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"mailroom/internal/dnsresolve"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

type received struct {
	headers http.Header
	body    []byte
}

// receiver is a webhook endpoint that checks signatures with its own code.
type receiver struct {
	mu     sync.Mutex
	secret string
	got    []received
	bad    int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	sig := r.Header.Get("x-svc-signature")
	var ts string
	var v1s []string
	for _, part := range strings.Split(sig, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1s = append(v1s, v)
		}
	}
	mac := hmac.New(sha256.New, []byte(rc.secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := hex.EncodeToString(mac.Sum(nil))
	ok := false
	for _, v := range v1s {
		if hmac.Equal([]byte(v), []byte(want)) {
			ok = true
		}
	}
	if !ok {
		rc.bad++
		w.WriteHeader(400)
		return
	}
	rc.got = append(rc.got, received{r.Header.Clone(), body})
	w.WriteHeader(200)
}

func (rc *receiver) events() []map[string]any {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []map[string]any
	for _, g := range rc.got {
		var m map[string]any
		json.Unmarshal(g.body, &m)
		out = append(out, m)
	}
	return out
}

func TestVerifiedDomainSendsSignedMailAndWebhooks(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	a := testapp.Start(t, testapp.WithMX(dns, sink),
		testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"),
	)

	// A webhook endpoint subscribed to every email event.
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	r := a.Do("POST", "/v1/webhooks", map[string]any{"url": srv.URL + "/hook", "events": []string{"email.sent", "email.delivered", "email.bounced", "domain.verified"}})
	if r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	rc.mu.Lock()
	rc.secret = r.JSON()["secret"].(string)
	rc.mu.Unlock()

	// Add the domain: sends from it are refused until it verifies.
	r = a.Do("POST", "/v1/domains", map[string]any{"domain": "Acme.Example"})
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	var dom struct {
		ID      string
		Domain  string
		Records []dnstest.Record
	}
	r.Decode(t, &dom)
	send := map[string]any{"from": "Acme <news@acme.example>", "to": []string{"bob@rcpt.example"}, "subject": "Héllo", "html": "<p>Hi <b>Bob</b></p>", "tags": map[string]string{"campaign": "welcome"}}
	if r := a.Do("POST", "/v1/emails", send); r.Status != 422 || !strings.Contains(string(r.Body), "domain_not_verified") {
		t.Fatalf("send from pending domain: %d %s", r.Status, r.Body)
	}
	other := map[string]any{"from": "x@elsewhere.example", "to": []string{"bob@rcpt.example"}, "subject": "s", "text": "t"}
	if r := a.Do("POST", "/v1/emails", other); r.Status != 422 || !strings.Contains(string(r.Body), "invalid_from_domain") {
		t.Fatalf("send from unknown domain: %d %s", r.Status, r.Body)
	}

	// Publish exactly what was returned and verify.
	dns.Publish(dom.Records)
	if r := a.Do("POST", "/v1/domains/"+dom.ID+"/verify", nil); r.Status != 200 || r.JSON()["verified"] != true {
		t.Fatalf("verify: %d %s", r.Status, r.Body)
	}

	// Now the send is accepted, delivered over SMTP and DKIM-signed.
	r = a.Do("POST", "/v1/emails", send)
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	msgs := sink.WaitFor(1, 15*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("sink got %d messages", len(msgs))
	}
	m := msgs[0]
	if m.To[0] != "bob@rcpt.example" || !strings.HasPrefix(m.From, "bounces+") || !strings.HasSuffix(m.From, "@send.acme.example") {
		t.Fatalf("envelope %s -> %v", m.From, m.To)
	}
	resolver := dnsresolve.New(dns.Addr())
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) { return resolver.LookupTXT(context.Background(), name) },
	})
	if err != nil || len(verifs) != 1 || verifs[0].Err != nil || verifs[0].Domain != "acme.example" {
		t.Fatalf("DKIM: %v %+v", err, verifs)
	}

	// The email's status and timeline follow, and the webhooks arrive signed.
	testapp.Eventually(t, 15*time.Second, func() bool {
		return a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"] == "delivered"
	}, "email %s never delivered", id)
	testapp.Eventually(t, 15*time.Second, func() bool {
		kinds := map[string]bool{}
		for _, e := range rc.events() {
			kinds[e["event"].(string)] = true
		}
		return kinds["email.sent"] && kinds["email.delivered"] && kinds["domain.verified"]
	}, "webhooks did not arrive: %v", rc.events())
	for _, e := range rc.events() {
		if e["event"] == "email.delivered" {
			data := e["data"].(map[string]any)
			if data["email_id"] != id || e["sequence"].(float64) != 3 || data["tags"].(map[string]any)["campaign"] != "welcome" {
				t.Fatalf("delivered event %v", e)
			}
		}
	}

	// A later bounce comes back to the Return-Path at the bounce
	// subdomain (whose MX points here): the SMTP server takes it and the
	// email bounces.
	report := "From: MAILER-DAEMON@mx.rcpt.example\r\nTo: " + m.From + "\r\nSubject: Undelivered Mail\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/report; report-type=delivery-status; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nGone.\r\n" +
		"--b1\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.rcpt.example\r\n\r\nFinal-Recipient: rfc822; bob@rcpt.example\r\n" +
		"Action: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n--b1--\r\n"
	if err := smtp.SendMail(a.SMTPAddr(), nil, "", []string{m.From}, []byte(report)); err != nil {
		t.Fatalf("bounce to %s: %v", m.From, err)
	}
	testapp.Eventually(t, 15*time.Second, func() bool {
		for _, e := range rc.events() {
			if e["event"] == "email.bounced" && e["data"].(map[string]any)["email_id"] == id {
				return true
			}
		}
		return false
	}, "no email.bounced after the bounce to %s: %v", m.From, rc.events())
	rc.mu.Lock()
	if rc.bad != 0 {
		t.Fatalf("%d webhook deliveries with bad signatures", rc.bad)
	}
	rc.mu.Unlock()
}

// TestQuickstart is the README's quickstart: a sandbox send to delivered@.
func TestQuickstart(t *testing.T) {
	a := testapp.Start(t)
	r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": []string{"delivered@mailroom.test"}, "subject": "Hello", "text": "It works."})
	if r.Status != 200 || r.JSON()["status"] != "queued" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	testapp.Eventually(t, 10*time.Second, func() bool {
		return a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"] == "delivered"
	}, "quickstart email not delivered")
}

// Sends to the test addresses raise their events inside the accepting group
// commit, which also decides whether the workspace has an endpoint to hand
// them to: a workspace with one receives them, signed and marked test_mode.
func TestTestAddressEventsReachWebhooks(t *testing.T) {
	a := testapp.Start(t)
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	r := a.Do("POST", "/v1/webhooks", map[string]any{"url": srv.URL + "/hook", "events": []string{"email.sent", "email.delivered", "email.bounced"}})
	if r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	rc.mu.Lock()
	rc.secret = r.JSON()["secret"].(string)
	rc.mu.Unlock()

	ids := map[string]string{} // email id -> the event that ends it
	for _, to := range []string{"delivered@mailroom.test", "bounced@mailroom.test"} {
		r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": []string{to}, "subject": "Hi", "text": "x"})
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", to, r.Status, r.Body)
		}
		ids[r.JSON()["id"].(string)] = map[bool]string{true: "email.delivered", false: "email.bounced"}[strings.HasPrefix(to, "delivered@")]
	}
	testapp.Eventually(t, 15*time.Second, func() bool {
		seen := map[string]bool{}
		for _, e := range rc.events() {
			data, _ := e["data"].(map[string]any)
			if data["test_mode"] != true {
				continue
			}
			id, _ := data["email_id"].(string)
			seen[id+" "+e["event"].(string)] = true
		}
		for id, last := range ids {
			if !seen[id+" email.sent"] || !seen[id+" "+last] {
				return false
			}
		}
		return true
	}, "test-address events did not reach the endpoint: %v", rc.events())
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.bad != 0 {
		t.Fatalf("%d webhook deliveries with bad signatures", rc.bad)
	}
}
