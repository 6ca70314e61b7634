package dashboard_test

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestOverviewFirstSteps (#43 item 6): a new workspace's overview lists
// what to do first, with the exact curl of a test send at the workspace's
// base URL; each step is ticked once done; the charts are six daily series
// of 30 days with their totals.
func TestOverviewFirstSteps(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t) // outbound mail lands here
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_PUBLIC_URL", "https://mail.example.com"), testapp.WithEnv("MAILROOM_DNS_RESOLVER", dns.Addr()),
		testapp.WithEnv("MAILROOM_OUTBOUND", "smtp://"+sink.Addr()))
	v := newVisitor(t, a)
	p := v.signIn(a.Key)
	want(t, p, http.StatusOK, "First steps", "Verify a domain", "Send a test email", "Create an audience", "Add a webhook")
	curl := regexp.MustCompile(`(?s)<pre id="curl">(.*?)</pre>`).FindStringSubmatch(p.body)
	if curl == nil {
		t.Fatal("no curl command")
	}
	cmd := html.UnescapeString(curl[1])
	for _, s := range []string{"curl https://mail.example.com/v1/emails", `Authorization: Bearer $MAILROOM_API_KEY`, `"from": "onboarding@mailroom.test"`, `"to": "delivered@mailroom.test"`} {
		if !strings.Contains(cmd, s) {
			t.Fatalf("the command lacks %q:\n%s", s, cmd)
		}
	}
	if strings.Contains(p.body, `class="done"`) {
		t.Fatalf("a step of an empty workspace is ticked: %s", regexp.MustCompile(`class="done" id="[a-z-]+"`).FindAllString(p.body, -1))
	}

	// Do three of the steps as the command says: each is ticked.
	r := a.Do("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.test", "to": "delivered@mailroom.test", "subject": "Hello from Mailroom", "text": "It works."})
	if r.Status != 200 {
		t.Fatalf("the command's send: %d %s", r.Status, r.Body)
	}
	a.Do("POST", "/v1/audiences", map[string]any{"name": "News"})
	a.Do("POST", "/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9/h"})
	p = v.get("/")
	for _, id := range []string{"step-send", "step-audience", "step-webhook"} {
		want(t, p, http.StatusOK, `class="done" id="`+id+`"`)
	}
	if strings.Contains(p.body, `class="done" id="step-domain"`) {
		t.Fatal("the domain step is ticked without a verified domain")
	}

	// The last step, a verified domain, and a send from it (a test
	// address's send is not counted): the list is gone, the send charted.
	a.VerifiedDomain(a.Key, dns, "news.example.org", nil)
	if r := a.Do("POST", "/v1/emails", map[string]any{"from": "hi@news.example.org", "to": "reader@example.net", "subject": "Hi", "text": "x"}); r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	testapp.Eventually(t, 15*time.Second, func() bool {
		p = v.get("/")
		return strings.Contains(p.body, `aria-label="Delivered per day, 1 in 30 days"`)
	}, "the delivery never reached the chart: "+strings.Join(regexp.MustCompile(`aria-label="[^"]*in 30 days"`).FindAllString(p.body, -1), ", ")+" "+string(a.Do("GET", "/v1/emails/"+r.JSON()["id"].(string), nil).Body))
	if n := strings.Count(p.body, `<svg class="chart spark"`); n != 6 {
		t.Fatalf("%d charts, want 6", n)
	}
	if n := strings.Count(p.body, "<rect "); n != 6*30 {
		t.Fatalf("%d bars, want %d", n, 6*30)
	}
	want(t, p, http.StatusOK, `aria-label="Sent per day, 1 in 30 days"`, "Opened", "Clicked", "Bounced", "Complained")
	if strings.Contains(p.body, "First steps") {
		t.Fatal("the first steps are still shown, all done")
	}
}
