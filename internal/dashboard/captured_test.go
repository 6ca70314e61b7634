package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/capture"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/testapp"
)

// TestCapturedMail (#48 item 4): with MAILROOM_OUTBOUND=capture a domain
// verifies without DNS, a send to an outside address is delivered into
// captured mail (the API's list, one message with html, text, headers and
// the signed raw bytes; the dashboard's views), the webhook on 127.0.0.1
// gets email.delivered; a node that sends answers 404 on those routes.
func TestCapturedMail(t *testing.T) {
	dns := dnstest.Start(t)
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_OUTBOUND", "capture"), testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()))
	var delivered atomic.Value
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Event string `json:"event"`
			Data  struct {
				EmailID string `json:"email_id"`
			} `json:"data"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &env) == nil && env.Event == "email.delivered" {
			delivered.Store(env.Data.EmailID)
		}
	}))
	defer hook.Close()
	if r := a.Do("POST", "/v1/webhooks", map[string]any{"url": hook.URL, "events": []string{"email.delivered"}}); r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	r := a.Do("POST", "/v1/domains", map[string]any{"name": "acme.example"})
	if r.Status != 201 && r.Status != 200 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	dom := r.JSON()["id"].(string)
	if r := a.Do("POST", "/v1/domains/"+dom+"/verify", nil); r.Status != 200 {
		t.Fatalf("verify: %d %s", r.Status, r.Body)
	}
	if st := a.Do("GET", "/v1/domains/"+dom, nil).JSON()["verification_status"]; st != "verified" {
		t.Fatalf("domain %v without DNS under capture", st)
	}
	r = a.Do("POST", "/v1/emails", map[string]any{"from": "Acme <hello@acme.example>", "to": "ann@gmail.com", "bcc": "audit@corp.example",
		"subject": "Your receipt", "html": "<p>Thanks, <b>Ann</b></p>", "text": "Thanks, Ann"})
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	testapp.Eventually(t, 20*time.Second, func() bool { return a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"] == "delivered" }, "never delivered")
	testapp.Eventually(t, 20*time.Second, func() bool { return delivered.Load() == id }, "no email.delivered webhook on 127.0.0.1")

	list := a.Do("GET", "/v1/captured-emails", nil).JSON()
	data := list["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("captured %v", list)
	}
	c := data[0].(map[string]any)
	if c["email_id"] != id || c["subject"] != "Your receipt" || len(c["to"].([]any)) != 2 {
		t.Fatalf("captured %v", c)
	}
	full := a.Do("GET", "/v1/captured-emails/"+c["id"].(string), nil).JSON()
	headers := full["headers"].(map[string]any)
	if full["html"] != "<p>Thanks, <b>Ann</b></p>" || full["text"] != "Thanks, Ann" || headers["dkim-signature"] == nil ||
		!strings.HasPrefix(full["raw"].(string), "DKIM-Signature:") {
		t.Fatalf("captured message %v", full)
	}
	if _, ok := headers["bcc"]; ok {
		t.Fatal("the captured message carries Bcc")
	}
	raw := a.Do("GET", "/v1/captured-emails/"+c["id"].(string)+"/raw", nil)
	if raw.Status != 200 || string(raw.Body) != full["raw"] {
		t.Fatalf("raw %d", raw.Status)
	}
	story := a.Do("GET", "/v1/emails/"+id+"/attempts", nil).JSON()["data"].([]any)
	if len(story) == 0 || !strings.Contains(string(mustJSON(story)), "captured as "+c["id"].(string)) {
		t.Fatalf("attempts %s", mustJSON(story))
	}

	v := newVisitor(t, a)
	want(t, v.signIn(a.Key), http.StatusOK, `href="/captured"`)
	want(t, v.get("/captured"), http.StatusOK, "Your receipt", "ann@gmail.com")
	base := "/captured/" + c["id"].(string)
	want(t, v.get(base), http.StatusOK, `src="/captured/`+c["id"].(string)+`/body"`)
	want(t, v.get(base+"/body"), http.StatusOK, "<b>Ann</b>")
	want(t, v.get(base+"?view=text"), http.StatusOK, "Thanks, Ann")
	want(t, v.get(base+"?view=headers"), http.StatusOK, "dkim-signature")
	want(t, v.get(base+"?view=raw"), http.StatusOK, "DKIM-Signature:")

	// Retention purges captured mail with the bodies (MAILROOM_RETAIN_BODIES).
	if n, err := capture.Purge(context.Background(), a.DB, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if r := a.Do("GET", "/v1/captured-emails/"+c["id"].(string), nil); r.Status != 404 {
		t.Fatalf("after the purge: %d", r.Status)
	}

	// A node that sends has no captured mail.
	b := testapp.Start(t)
	if r := b.Do("GET", "/v1/captured-emails", nil); r.Status != 404 {
		t.Fatalf("a sending node: %d %s", r.Status, r.Body)
	}
	want(t, newVisitor(t, b).signIn(b.Key), http.StatusOK)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
