package delivery_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// TestEmailStory (#48 item 1): an email refused once and then accepted
// answers GET /v1/emails/{id}/attempts with both attempts — the exchanger,
// the address dialled, the source address, TLS with its cipher and an
// unverified (self-signed) certificate, each command's reply — and the
// webhook deliveries of its events; another workspace's key reads 404.
func TestEmailStory(t *testing.T) {
	var refused atomic.Bool
	srvTLS, _ := smtpsink.SelfSigned(t)
	sink := smtpsink.Start(t, smtpsink.WithTLS(srvTLS), smtpsink.WithRcptRule(func(to string) error {
		if refused.CompareAndSwap(false, true) {
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try again in a moment"}
		}
		return nil
	}))
	dns := dnstest.Start(t)
	// The test polls its story often; the API's 600 a minute would answer 429 on a slow machine.
	a := testapp.Start(t, testapp.WithMX(dns, sink))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)
	var hooks atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hooks.Add(1)
	}))
	defer receiver.Close()
	if r := a.Do("POST", "/v1/webhooks", map[string]any{"url": receiver.URL, "events": []string{"email.sent", "email.delivered"}}); r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	r := a.Do("POST", "/v1/emails", map[string]any{"from": "news@acme.example", "to": "ann@rcpt.example", "subject": "Hi", "text": "hello"})
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	story := func() map[string]any { return a.Do("GET", "/v1/emails/"+id+"/attempts", nil).JSON() }
	testapp.Eventually(t, 15*time.Second, func() bool { return len(story()["data"].([]any)) == 1 }, "no first attempt")

	// The retry is a minute away: run it now. Its job is queued once the
	// batch that made the attempt ends, after the attempt's commit.
	ctx := context.Background()
	testapp.Eventually(t, 15*time.Second, func() bool {
		jobs, err := a.Queue.Client.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateScheduled, rivertype.JobStateRetryable).First(20))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs.Jobs {
			if _, err := a.Queue.Client.JobRetry(ctx, j.ID); err != nil {
				t.Fatal(err)
			}
		}
		return len(jobs.Jobs) > 0
	}, "no retry queued")
	testapp.Eventually(t, 15*time.Second, func() bool { return story()["status"] == "delivered" && hooks.Load() >= 2 }, "never delivered with its webhooks")
	testapp.Eventually(t, 10*time.Second, func() bool { return len(story()["webhook_deliveries"].([]any)) >= 2 }, "webhook deliveries missing from the story")

	s := story()
	data := s["data"].([]any)
	if len(data) != 2 {
		t.Fatalf("attempts: %v", s)
	}
	first, second := data[0].(map[string]any), data[1].(map[string]any)
	if first["outcome"] != "deferred" || first["code"] != 451.0 || first["enhanced_code"] != "4.3.0" || first["stage"] != "rcpt" ||
		!strings.Contains(first["reply"].(string), "Try again") {
		t.Errorf("first attempt %v", first)
	}
	if second["outcome"] != "delivered" || second["code"] != 250.0 || second["attempt"] != 2.0 || second["stage"] != "data" {
		t.Errorf("second attempt %v", second)
	}
	for _, at := range []map[string]any{first, second} {
		if !strings.HasPrefix(at["mx"].(string), "mx.rcpt.example") || at["remote_ip"] != "127.0.0.1" || at["source_ip"] != "127.0.0.1" {
			t.Errorf("where it went: %v", at)
		}
		tls, _ := at["tls"].(map[string]any)
		if tls == nil || !strings.HasPrefix(tls["version"].(string), "TLS 1.") || tls["cipher"] == "" || tls["verified"] != false {
			t.Errorf("tls: %v", at["tls"])
		}
		var cmds []string
		for _, st := range at["replies"].([]any) {
			cmds = append(cmds, st.(map[string]any)["command"].(string))
		}
		if c := strings.Join(cmds, " "); !strings.Contains(c, "MAIL RCPT") {
			t.Errorf("replies: %v", at["replies"])
		}
	}
	last := second["replies"].([]any)
	if end := last[len(last)-1].(map[string]any); (end["command"] != "DATA" && end["command"] != "BDAT") || end["code"] != 250.0 {
		t.Errorf("the message's reply: %v", end)
	}
	for _, d := range s["webhook_deliveries"].([]any) {
		if d := d.(map[string]any); d["status_code"] != 200.0 || (d["event"] != "email.sent" && d["event"] != "email.delivered") {
			t.Errorf("webhook delivery %v", d)
		}
	}

	// The dashboard's email page tells the same story.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := func(method, path string, form url.Values) string {
		t.Helper()
		req, _ := http.NewRequest(method, a.URL+path, strings.NewReader(form.Encode()))
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		res, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page("GET", "/sign-in", nil))
	if csrf == nil {
		t.Fatal("no sign-in form")
	}
	page("POST", "/sign-in", url.Values{"key": {a.Key}, "csrf": {csrf[1]}})
	body := page("GET", "/emails/"+id, nil)
	for _, want := range []string{"Delivery attempts", "mx.rcpt.example", "451", "4.3.0", "Try again in a moment", "certificate not verified", "<code>DATA</code>"} {
		if !strings.Contains(body, want) && !strings.Contains(body, strings.Replace(want, "DATA", "BDAT", 1)) {
			t.Errorf("the email's page lacks %q", want)
		}
	}

	_, other := a.NewWorkspace("Other", "other@example.com")
	if r := a.DoKey(other, "GET", "/v1/emails/"+id+"/attempts", nil); r.Status != 404 {
		t.Fatalf("another workspace's key: %d %s", r.Status, r.Body)
	}
}
