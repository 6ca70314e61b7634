package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailroom/internal/app"
	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

// logBuffer collects a node's JSON log lines (binary.Logs, safe while the
// node writes).
type logBuffer struct{ binary.Logs }

// lines are the log records whose msg is msg.
func (b *logBuffer) lines(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// scrape reads /metrics and returns the value of each series line.
func scrape(t *testing.T, a *testapp.App) map[string]float64 {
	t.Helper()
	resp, err := a.Client.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			out[l[:i]] = v
		}
	}
	return out
}

// TestMailLogAndMetrics: what an operator reads while mail flows. One
// delivered send, one deferred, one received message and one submission
// each leave one structured log line and move the counters CONTRACT-WAVE3
// names; request lines stay at debug, and no line carries the API key.
func TestMailLogAndMetrics(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	logs := &logBuffer{}
	a := testapp.Start(t, testapp.WithMX(dns, sink),
		testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"),
		testapp.WithEnv("MAILROOM_SUBMISSION_ADDR", "127.0.0.1:0"),
		func(_ map[string]string, o *app.Options) {
			o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		})
	hooks := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct{ Event string }
		json.NewDecoder(r.Body).Decode(&ev)
		hooks <- ev.Event
	}))
	defer srv.Close()
	if r := a.Do("POST", "/v1/webhooks", map[string]any{"url": srv.URL, "events": []string{"email.delivered", "email.received"}}); r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)

	r := a.Do("POST", "/v1/emails", map[string]any{"from": "news@acme.example", "to": []string{"bob@rcpt.example"}, "subject": "s", "text": "t"})
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	if r := a.Do("POST", "/v1/emails", map[string]any{"from": "news@acme.example", "to": []string{"defer@rcpt.example"}, "subject": "s", "text": "t"}); r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	var list struct{ Mailboxes []struct{ Address string } }
	a.Do("GET", "/v1/mailboxes", nil).Decode(t, &list)
	inbox := list.Mailboxes[0].Address
	if err := smtp.SendMail(a.SMTPAddr(), nil, "ann@corp.example", []string{inbox}, []byte("From: ann@corp.example\r\nTo: "+inbox+"\r\nSubject: hi\r\n\r\nsecret body words\r\n")); err != nil {
		t.Fatalf("inbound: %v", err)
	}
	_, port, _ := net.SplitHostPort(a.SubmissionAddr())
	sandbox := "onboarding@" + a.Env["MAILROOM_SERVICE_DOMAIN"]
	if err := smtp.SendMail("localhost:"+port, smtp.PlainAuth("", "apikey", a.Key, "localhost"), sandbox, []string{"delivered@" + a.Env["MAILROOM_SERVICE_DOMAIN"]},
		[]byte("From: "+sandbox+"\r\nTo: delivered@"+a.Env["MAILROOM_SERVICE_DOMAIN"]+"\r\nSubject: sub\r\n\r\nHi\r\n")); err != nil {
		t.Fatalf("submission: %v", err)
	}

	testapp.Eventually(t, 15*time.Second, func() bool {
		m := scrape(t, a)
		return m[`mailroom_emails_delivered_total{lane="transactional"}`] == 1 && m[`mailroom_emails_deferred_total{lane="transactional"}`] == 1 &&
			m[`mailroom_received_total`] == 1 && m[`mailroom_webhook_deliveries_total{outcome="delivered"}`] >= 2
	}, "counters never reached what happened: %v", scrape(t, a))
	m := scrape(t, a)
	for series, want := range map[string]float64{
		`mailroom_emails_accepted_total{lane="transactional"}`:          2, // the test-address submission counts nowhere
		`mailroom_emails_sent_total{lane="transactional"}`:              1,
		`mailroom_delivery_deferrals_total{destination="rcpt.example"}`: 1,
		`mailroom_delivery_latency_seconds_count{lane="transactional"}`: 1,
		`mailroom_submissions_total{outcome="accepted"}`:                1,
		`mailroom_queue_jobs{queue="marketing"}`:                        0,
	} {
		if m[series] != want {
			t.Errorf("%s = %v, want %v", series, m[series], want)
		}
	}
	if _, ok := m[`mailroom_queue_oldest_job_seconds{queue="deliver"}`]; !ok {
		t.Errorf("no queue age for the deliver lane")
	}
	if n := m[`mailroom_delivery_outcome_unsaved_seconds_count`]; n < 2 { // the delivered and the deferred attempt
		t.Errorf("duplicate window observed %v times, want at least 2", n)
	}

	attempts := logs.lines("delivery attempt")
	var delivered, deferred map[string]any
	for _, l := range attempts {
		switch l["outcome"] {
		case "delivered":
			delivered = l
		case "deferred":
			deferred = l
		}
	}
	if delivered == nil || deferred == nil {
		t.Fatalf("attempt lines %v", attempts)
	}
	if delivered["email_id"] != id || delivered["recipient_domain"] != "rcpt.example" || delivered["remote_ip"] != "127.0.0.1" ||
		delivered["code"] != float64(250) || !strings.HasPrefix(delivered["mx"].(string), "mx.rcpt.example") || delivered["lane"] != "transactional" {
		t.Errorf("delivered line %v", delivered)
	}
	if deferred["code"].(float64) < 400 || deferred["code"].(float64) > 499 || deferred["reply"] == "" {
		t.Errorf("deferred line %v", deferred)
	}
	rec := logs.lines("received message")
	if len(rec) != 1 || rec[0]["to"] != inbox || rec[0]["from"] != "ann@corp.example" || rec[0]["spf"] == nil || rec[0]["outcome"] != "stored" {
		t.Errorf("received lines %v", rec)
	}
	sub := logs.lines("submitted message")
	if len(sub) != 1 || sub[0]["code"] != float64(250) || sub[0]["recipients"] != float64(1) {
		t.Errorf("submitted lines %v", sub)
	}
	testapp.Eventually(t, 10*time.Second, func() bool { return len(logs.lines("webhook attempt")) >= 2 }, "no webhook attempt lines")
	if len(logs.lines("request")) != 0 {
		t.Errorf("request lines at info: %v", logs.lines("request"))
	}
	if s := logs.String(); strings.Contains(s, a.Key) || strings.Contains(s, "secret body words") {
		t.Errorf("the log carries the API key or a body")
	}

	// The alert rules and the Grafana dashboard in deploy/ name only
	// metrics this node exposes.
	families := map[string]bool{}
	resp, err := a.Client.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range strings.Split(string(body), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = true
		}
	}
	metric := regexp.MustCompile(`mailroom_[a-z_]+`)
	for _, file := range []string{"../../deploy/prometheus-alerts.yml", "../../deploy/grafana-dashboard.json"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		named := 0
		for _, n := range metric.FindAllString(string(b), -1) {
			base := n
			for _, suf := range []string{"_bucket", "_count", "_sum"} {
				if strings.HasSuffix(n, suf) && families[strings.TrimSuffix(n, suf)] {
					base = strings.TrimSuffix(n, suf)
				}
			}
			if !families[base] {
				t.Errorf("%s names %s, which the node does not expose", file, n)
			}
			named++
		}
		if named < 8 {
			t.Errorf("%s names only %d metrics", file, named)
		}
	}
}
