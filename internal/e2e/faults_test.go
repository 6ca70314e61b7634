package e2e

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"mailroom/internal/app"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
	"mailroom/internal/testkit/testdb"
)

// withLogs sends the node's JSON log lines to logs.
func withLogs(logs *logBuffer) testapp.Option {
	return func(_ map[string]string, o *app.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
}

// A node whose disk has less free space than MAILROOM_MIN_FREE_DISK
// refuses new work and says why, in every protocol: the API 507
// storage_full with Retry-After (reads still answered), SMTP 452 4.3.1 at
// MAIL, /readyz not ready; and the start-up log names the disk and the
// setting. The threshold is beyond any disk, so nothing else changes.
func TestFullDiskRefusesNewWork(t *testing.T) {
	if testdb.IsPostgres() {
		t.Skip("the free-space guard watches the SQLite database's disk; on PostgreSQL its disk_full answers 507 (TestDatabaseDiskFullAnswers507)")
	}
	logs := &logBuffer{}
	a := testapp.Start(t, withLogs(logs),
		testapp.WithEnv("MAILROOM_MIN_FREE_DISK", "100000TB"),
		testapp.WithEnv("MAILROOM_SMTP_ADDR", "127.0.0.1:0"),
		testapp.WithEnv("MAILROOM_SUBMISSION_ADDR", "127.0.0.1:0"))

	if l := logs.lines("starting on a nearly full disk: new work is refused until space is freed"); len(l) != 1 ||
		!strings.Contains(l[0]["cause"].(string), "MAILROOM_MIN_FREE_DISK is 100000TB") || !strings.Contains(l[0]["cause"].(string), "has ") {
		t.Fatalf("start-up line: %v\n%s", l, logs.String())
	}
	sandbox := "onboarding@" + a.Env["MAILROOM_SERVICE_DOMAIN"]
	r := a.Do("POST", "/v1/emails", map[string]any{"from": sandbox, "to": []string{"owner@example.com"}, "subject": "s", "text": "t"})
	if r.Status != 507 || r.ErrCode() != "storage_full" || r.Header.Get("Retry-After") == "" || r.ErrFlat() {
		t.Fatalf("send: %d %v %s", r.Status, r.Header, r.Body)
	}
	// A flat-shape route answers the same code in its shape.
	r = a.Do("POST", "/v1/suppressions", map[string]any{"email": "x@example.com"})
	if r.Status != 507 || r.ErrCode() != "storage_full" || !r.ErrFlat() || r.Header.Get("Retry-After") == "" {
		t.Fatalf("suppression: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/v1/emails", "/v1/domains", "/v1/suppressions"} {
		if r := a.Do("GET", path, nil); r.Status != 200 {
			t.Errorf("GET %s while full: %d %s", path, r.Status, r.Body)
		}
	}
	r = a.Do("GET", "/readyz", nil)
	if r.Status != 503 || !strings.Contains(string(r.Body), "disk nearly full") || strings.Contains(string(r.Body), a.Env["MAILROOM_DATA_DIR"]) {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}

	// Inbound SMTP and submission: 452 4.3.1 at MAIL, as Postfix answers.
	for _, listener := range []struct {
		name, addr string
		auth       bool
	}{{"inbound", a.SMTPAddr(), false}, {"submission", a.SubmissionAddr(), true}} {
		c, err := smtp.Dial(listener.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Hello("client.example"); err != nil {
			t.Fatal(err)
		}
		if listener.auth {
			if err := c.Auth(sasl.NewPlainClient("", "apikey", a.Key)); err != nil {
				t.Fatalf("%s AUTH: %v", listener.name, err)
			}
		}
		err = c.Mail("ann@corp.example", nil)
		var se *smtp.SMTPError
		if !errors.As(err, &se) || se.Code != 452 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 1}) || !strings.Contains(se.Message, "Insufficient system storage") {
			t.Errorf("%s MAIL: %v, want 452 4.3.1", listener.name, err)
		}
		c.Close()
	}
}

// faultSQL makes the database refuse, for lack of space, writes that set
// an email's status to status (a BEFORE UPDATE trigger; on INSERT when
// insert is set): PostgreSQL raises its own disk_full (SQLSTATE 53100),
// SQLite aborts with SQLITE_FULL's words. heal drops it.
func faultSQL(postgres, insert bool, status string) (fault, heal string) {
	event, when := "UPDATE", "NEW.status = '"+status+"'"
	if insert {
		event, when = "INSERT", "1 = 1"
	}
	if postgres {
		return `CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$;
			CREATE TRIGGER disk_full BEFORE ` + event + ` ON emails FOR EACH ROW WHEN (` + when + `) EXECUTE FUNCTION disk_full()`,
			`DROP TRIGGER disk_full ON emails; DROP FUNCTION disk_full()`
	}
	return `CREATE TRIGGER disk_full BEFORE ` + event + ` ON emails FOR EACH ROW WHEN ` + when + `
		BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`, `DROP TRIGGER disk_full`
}

func execSQL(t *testing.T, a *testapp.App, q string) {
	t.Helper()
	if _, err := a.DB.W.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// When the database itself refuses a write for lack of space, the API
// answers 507 storage_full with Retry-After, not 500; once space returns
// the same send is accepted.
func TestDatabaseDiskFullAnswers507(t *testing.T) {
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_SUBMISSION_ADDR", "127.0.0.1:0"))
	fault, heal := faultSQL(testdb.IsPostgres(), true, "")
	execSQL(t, a, fault)
	sandbox := "onboarding@" + a.Env["MAILROOM_SERVICE_DOMAIN"]
	send := map[string]any{"from": sandbox, "to": []string{"owner@example.com"}, "subject": "s", "text": "t"}
	r := a.Do("POST", "/v1/emails", send)
	if r.Status != 507 || r.ErrCode() != "storage_full" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("send on a full database: %d %s", r.Status, r.Body)
	}
	// Submission answers the message 452 4.3.1, as the guard would.
	c, err := smtp.Dial(a.SubmissionAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Auth(sasl.NewPlainClient("", "apikey", a.Key)); err != nil {
		t.Fatal(err)
	}
	err = c.SendMail(sandbox, []string{"owner@example.com"}, strings.NewReader("From: "+sandbox+"\r\nTo: owner@example.com\r\nSubject: s\r\n\r\nt\r\n"))
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 452 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 1}) {
		t.Fatalf("submission on a full database: %v, want 452 4.3.1", err)
	}
	execSQL(t, a, heal)
	if r := a.Do("POST", "/v1/emails", send); r.Status != 200 {
		t.Fatalf("send once space returned: %d %s", r.Status, r.Body)
	}
}

// A delivered email whose outcome cannot be written (the disk is full) is
// not sent again: the outcome write is tried again, with backoff, until
// space returns, instead of failing the job, which the queue would run
// again (its first retry comes after about a second) and send twice.
func TestOutcomeWriteOutlastsAFullDisk(t *testing.T) {
	dns := dnstest.Start(t)
	sink := smtpsink.Start(t)
	logs := &logBuffer{}
	a := testapp.Start(t, testapp.WithMX(dns, sink), withLogs(logs))
	a.VerifiedDomain(a.Key, dns, "acme.example", nil)

	fault, heal := faultSQL(testdb.IsPostgres(), false, "delivered")
	execSQL(t, a, fault)
	r := a.Do("POST", "/v1/emails", map[string]any{"from": "news@acme.example", "to": []string{"bob@rcpt.example"}, "subject": "s", "text": "t"})
	if r.Status != 200 {
		t.Fatalf("send: %d %s", r.Status, r.Body)
	}
	id := r.JSON()["id"].(string)
	sink.WaitFor(1, 10*time.Second)
	// Five failed tries (0.1+0.2+0.4+0.8+1.6 s of waits) outlast the
	// queue's first retry.
	testapp.Eventually(t, 15*time.Second, func() bool {
		return len(logs.lines("writing a delivery outcome failed; trying again")) >= 5
	}, "five failed outcome writes:\n%s", logs.String())
	if r := a.Do("GET", "/v1/emails/"+id, nil); r.JSON()["status"] == "delivered" {
		t.Fatalf("delivered while the outcome could not be written: %s", r.Body)
	}
	execSQL(t, a, heal)
	testapp.Eventually(t, 30*time.Second, func() bool {
		return a.Do("GET", "/v1/emails/"+id, nil).JSON()["status"] == "delivered"
	}, "email delivered once space returned")
	if n := sink.Count(); n != 1 {
		t.Fatalf("the sink received %d copies, want 1", n)
	}
	if l := logs.lines("giving up writing a delivery outcome; the job will run again and may send the message twice"); len(l) != 0 {
		t.Fatalf("gave up: %v", l)
	}
}

// proxy forwards TCP connections to a database server until cut: then
// its port is closed and the connections through it dropped, as when the
// server goes away; restore listens on the same port again.
type proxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, addr: "127.0.0.1:0"}
	p.restore()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) restore() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// While PostgreSQL cannot be reached the API answers 503
// service_unavailable with Retry-After, never 500, and /readyz says the
// database is unreachable without naming its user, database or host (it
// is unauthenticated); when it is back, so is the node.
func TestDatabaseOutageAnswers503(t *testing.T) {
	if !testdb.IsPostgres() {
		t.Skip("an outage of a database server: PostgreSQL only")
	}
	u, err := url.Parse(testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	u.Host = p.addr
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_DATABASE_URL", u.String()))
	if r := a.Do("GET", "/v1/emails", nil); r.Status != 200 {
		t.Fatalf("before: %d %s", r.Status, r.Body)
	}
	p.cut()
	sandbox := "onboarding@" + a.Env["MAILROOM_SERVICE_DOMAIN"]
	for i := range 3 {
		for _, c := range []struct{ method, path string }{{"GET", "/v1/emails"}, {"GET", "/v1/domains"}, {"POST", "/v1/emails"}} {
			var body any
			if c.method == "POST" {
				body = map[string]any{"from": sandbox, "to": []string{"owner@example.com"}, "subject": "s", "text": "t"}
			}
			r := a.Do(c.method, c.path, body)
			if r.Status != 503 || r.ErrCode() != "service_unavailable" || r.Header.Get("Retry-After") == "" {
				t.Fatalf("try %d, %s %s during the outage: %d %s", i, c.method, c.path, r.Status, r.Body)
			}
		}
	}
	r := a.Do("GET", "/readyz", nil)
	host, port, _ := net.SplitHostPort(p.addr)
	body := string(r.Body)
	if r.Status != 503 || !strings.Contains(body, "database unreachable") {
		t.Fatalf("readyz during the outage: %d %s", r.Status, body)
	}
	for _, secret := range []string{u.User.Username(), strings.TrimPrefix(u.Path, "/"), host, port} {
		if strings.Contains(body, secret) {
			t.Errorf("readyz names %q: %s", secret, body)
		}
	}
	p.restore()
	testapp.Eventually(t, 10*time.Second, func() bool { return a.Do("GET", "/v1/emails", nil).Status == 200 }, "the API back after the outage")
	if r := a.Do("GET", "/readyz", nil); r.Status != 200 {
		t.Fatalf("readyz after the outage: %d %s", r.Status, r.Body)
	}
}
