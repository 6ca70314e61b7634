package submission_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/smtp"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testapp"
)

const (
	sandbox   = "onboarding@mailroom.test"
	delivered = "delivered@mailroom.test"
)

// start boots a node with the submission listener on a loopback port.
func start(t *testing.T, opts ...testapp.Option) *testapp.App {
	t.Helper()
	opts = append([]testapp.Option{testapp.WithEnv("MAILROOM_SUBMISSION_ADDR", "127.0.0.1:0")}, opts...)
	return testapp.Start(t, opts...)
}

// conn is a raw SMTP client: one command, one reply, as the RFC reads.
type conn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cn := &conn{t: t, c: c, r: bufio.NewReader(c)}
	cn.expect("220")
	return cn
}

// reply reads one (possibly multi-line) reply and returns its last line.
func (c *conn) reply() string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reading reply: %v", err)
		}
		if len(line) < 4 || line[3] != '-' {
			return strings.TrimRight(line, "\r\n")
		}
	}
}

func (c *conn) expect(code string) string {
	c.t.Helper()
	line := c.reply()
	if !strings.HasPrefix(line, code) {
		c.t.Fatalf("reply %q, want %s", line, code)
	}
	return line
}

func (c *conn) cmd(line, code string) string {
	c.t.Helper()
	fmt.Fprintf(c.c, "%s\r\n", line)
	return c.expect(code)
}

func (c *conn) auth(key string) {
	c.t.Helper()
	c.cmd("EHLO client.example", "250")
	c.cmd("AUTH PLAIN "+base64.StdEncoding.EncodeToString([]byte("\x00anyone\x00"+key)), "235")
}

// send runs one transaction and answers the reply to the message.
func (c *conn) send(from string, rcpts []string, msg string) string {
	c.t.Helper()
	c.cmd("MAIL FROM:<"+from+">", "250")
	for _, r := range rcpts {
		c.cmd("RCPT TO:<"+r+">", "250")
	}
	c.cmd("DATA", "354")
	fmt.Fprintf(c.c, "%s\r\n.\r\n", strings.ReplaceAll(msg, "\n", "\r\n"))
	return c.reply()
}

// idOf reads the email id out of a 250 reply ("250 2.0.0 OK id=... status=...").
func idOf(t *testing.T, reply string) string {
	t.Helper()
	_, rest, ok := strings.Cut(reply, "id=")
	if !strings.HasPrefix(reply, "250") || !ok {
		t.Fatalf("reply %q carries no email id", reply)
	}
	return strings.Fields(rest)[0]
}

func message(headers string, body string) string {
	return "From: Onboarding <" + sandbox + ">\nTo: " + delivered + "\nSubject: Hello over SMTP\n" + headers + "\n" + body
}

// TestSubmitRaw: a message submitted over SMTP is booked as a send: 250
// names the email the API then reads, with its tags, its envelope-only Bcc
// and its custom header; the Idempotency-Key header replays the first id.
func TestSubmitRaw(t *testing.T) {
	a := start(t)
	c := dial(t, a.SubmissionAddr())
	c.auth(a.Key)
	bcc := "delivered+hidden@mailroom.test"
	msg := message("X-Mailroom-Tags: campaign=welcome, tier=gold\nIdempotency-Key: smtp-1\nX-Trace: abc\nBcc: leaked@mailroom.test\n", "Hi there")
	id := idOf(t, c.send(sandbox, []string{delivered, bcc}, msg))

	r := a.Do(http.MethodGet, "/v1/emails/"+id, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %d %s", r.Status, r.Body)
	}
	e := r.JSON()
	if e["subject"] != "Hello over SMTP" || fmt.Sprint(e["to"]) != "["+delivered+"]" || fmt.Sprint(e["bcc"]) != "["+bcc+"]" {
		t.Fatalf("email %s", r.Body)
	}
	if tags := e["tags"].(map[string]any); tags["campaign"] != "welcome" || tags["tier"] != "gold" {
		t.Fatalf("tags %v", e["tags"])
	}
	if again := idOf(t, c.send(sandbox, []string{delivered, bcc}, msg)); again != id {
		t.Fatalf("replay answered %s, want %s", again, id)
	}
	// The same key on another message is the API's conflict: a 5.x.x reply.
	other := message("Idempotency-Key: smtp-1\n", "Something else")
	if reply := c.send(sandbox, []string{delivered}, other); !strings.HasPrefix(reply, "5") {
		t.Fatalf("reused key: %q", reply)
	}
	c.cmd("QUIT", "221")
}

// TestSubmitRefusals: each refusal is a clear SMTP reply and books nothing.
func TestSubmitRefusals(t *testing.T) {
	a := start(t)

	t.Run("mail before auth", func(t *testing.T) {
		c := dial(t, a.SubmissionAddr())
		c.cmd("EHLO client.example", "250")
		c.cmd("MAIL FROM:<"+sandbox+">", "530")
	})
	t.Run("wrong key", func(t *testing.T) {
		c := dial(t, a.SubmissionAddr())
		c.cmd("EHLO client.example", "250")
		c.cmd("AUTH PLAIN "+base64.StdEncoding.EncodeToString([]byte("\x00u\x00mr_nonsense")), "535 5.7.8")
	})
	t.Run("key without mail:send", func(t *testing.T) {
		r := a.Do(http.MethodPost, "/v1/api-keys", map[string]any{"name": "reader", "scopes": []string{"mail:read"}})
		key, _ := r.JSON()["key"].(string)
		c := dial(t, a.SubmissionAddr())
		c.cmd("EHLO client.example", "250")
		c.cmd("AUTH PLAIN "+base64.StdEncoding.EncodeToString([]byte("\x00u\x00"+key)), "535 5.7.8")
	})
	t.Run("revoked key in an open session", func(t *testing.T) {
		r := a.Do(http.MethodPost, "/v1/api-keys", map[string]any{"name": "sender", "scopes": []string{"mail:send"}})
		m := r.JSON()
		c := dial(t, a.SubmissionAddr())
		c.auth(m["key"].(string))
		if r := a.Do(http.MethodDelete, "/v1/api-keys/"+m["id"].(string), nil); r.Status != http.StatusOK {
			t.Fatalf("revoke %d %s", r.Status, r.Body)
		}
		if reply := c.send(sandbox, []string{delivered}, message("", "hi")); !strings.HasPrefix(reply, "550 5.7.1") {
			t.Fatalf("revoked key: %q", reply)
		}
		// Another workspace's key cannot read what was booked: nothing was.
		if r := a.Do(http.MethodGet, "/v1/emails", nil); strings.Contains(string(r.Body), "revoked") {
			t.Fatal("unexpected")
		}
	})
	t.Run("another workspace's key sends as that workspace", func(t *testing.T) {
		_, key := a.NewWorkspace("Other", "other@example.com")
		c := dial(t, a.SubmissionAddr())
		c.auth(key)
		// The sandbox reaches the workspace's own addresses only: owner@example.com is not this one's.
		reply := c.send(sandbox, []string{"owner@example.com"}, strings.Replace(message("", "hi"), "To: "+delivered, "To: owner@example.com", 1))
		if !strings.HasPrefix(reply, "550 5.7.1") {
			t.Fatalf("sandbox to a stranger: %q", reply)
		}
	})
	c := dial(t, a.SubmissionAddr())
	c.auth(a.Key)
	t.Run("unverified from domain", func(t *testing.T) {
		msg := strings.Replace(message("", "hi"), "<"+sandbox+">", "<me@unverified.example>", 1)
		if reply := c.send("me@unverified.example", []string{delivered}, msg); !strings.HasPrefix(reply, "550 5.7.1") {
			t.Fatalf("unverified: %q", reply)
		}
	})
	t.Run("no To among the RCPTs", func(t *testing.T) {
		if reply := c.send(sandbox, []string{"bounced@mailroom.test"}, message("", "hi")); !strings.HasPrefix(reply, "550 5.5.2") {
			t.Fatalf("no To: %q", reply)
		}
	})
	t.Run("bad tags header", func(t *testing.T) {
		if reply := c.send(sandbox, []string{delivered}, message("X-Mailroom-Tags: nonsense\n", "hi")); !strings.HasPrefix(reply, "550 5.6.0") {
			t.Fatalf("tags: %q", reply)
		}
	})
	t.Run("bad send-at header", func(t *testing.T) {
		if reply := c.send(sandbox, []string{delivered}, message("X-Mailroom-Send-At: yesterday-ish\n", "hi")); !strings.HasPrefix(reply, "5") {
			t.Fatalf("send-at: %q", reply)
		}
	})
	t.Run("too many recipients", func(t *testing.T) {
		c.cmd("MAIL FROM:<"+sandbox+">", "250")
		for i := 0; i < 50; i++ {
			c.cmd(fmt.Sprintf("RCPT TO:<delivered+%d@mailroom.test>", i), "250")
		}
		c.cmd("RCPT TO:<delivered+50@mailroom.test>", "452")
		c.cmd("RSET", "250")
	})
	t.Run("header injection stays one header", func(t *testing.T) {
		msg := message("X-Note: a\r\n b\nSubject2: x\n", "hi")
		reply := c.send(sandbox, []string{delivered}, msg)
		id := idOf(t, reply)
		if r := a.Do(http.MethodGet, "/v1/emails/"+id, nil); r.Status != http.StatusOK {
			t.Fatalf("%d", r.Status)
		}
	})
	t.Run("bare LF", func(t *testing.T) {
		c.cmd("MAIL FROM:<"+sandbox+">", "250")
		c.cmd("RCPT TO:<"+delivered+">", "250")
		c.cmd("DATA", "354")
		fmt.Fprintf(c.c, "From: %s\nTo: %s\nSubject: lf\n\nbody\r\n.\r\n", sandbox, delivered)
		if reply := c.reply(); reply[0] != '2' && reply[0] != '5' {
			t.Fatalf("bare LF: %q", reply)
		}
	})
	t.Run("too large", func(t *testing.T) {
		c.cmd("MAIL FROM:<"+sandbox+"> SIZE=42991616", "552")
	})
	t.Run("pipelined", func(t *testing.T) {
		msg := strings.ReplaceAll(message("", "pipelined"), "\n", "\r\n")
		fmt.Fprintf(c.c, "MAIL FROM:<%s>\r\nRCPT TO:<%s>\r\nDATA\r\n", sandbox, delivered)
		c.expect("250")
		c.expect("250")
		c.expect("354")
		fmt.Fprintf(c.c, "%s\r\n.\r\n", msg)
		idOf(t, c.reply())
	})
	c.cmd("QUIT", "221")
}

// TestSubmitTooLargeData: a message past 40 MB without SIZE is refused
// after DATA with 552, and the session stays usable.
func TestSubmitTooLargeData(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 41 MB")
	}
	a := start(t)
	c := dial(t, a.SubmissionAddr())
	c.auth(a.Key)
	c.cmd("MAIL FROM:<"+sandbox+">", "250")
	c.cmd("RCPT TO:<"+delivered+">", "250")
	c.cmd("DATA", "354")
	w := bufio.NewWriterSize(c.c, 1<<16)
	fmt.Fprintf(w, "From: %s\r\nTo: %s\r\nSubject: big\r\n\r\n", sandbox, delivered)
	line := strings.Repeat("x", 998) + "\r\n"
	for n := 0; n < 41<<20; n += len(line) {
		w.WriteString(line)
	}
	w.WriteString(".\r\n")
	w.Flush()
	c.expect("552")
	c.cmd("NOOP", "250")
}

// TestNetSMTP: Go's net/smtp, which no one here wrote, submits with PLAIN
// in plain text on loopback and with LOGIN-free PLAIN over STARTTLS on the
// certificate's listener.
func TestNetSMTP(t *testing.T) {
	cfg, pool := smtpsink.SelfSigned(t)
	dir := t.TempDir()
	cert := cfg.Certificates[0]
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	a := start(t, testapp.WithEnv("MAILROOM_SMTP_TLS_CERT", certFile), testapp.WithEnv("MAILROOM_SMTP_TLS_KEY", keyFile),
		testapp.WithEnv("MAILROOM_SUBMISSION_TLS_ADDR", "127.0.0.1:0"))

	msg := []byte("From: " + sandbox + "\r\nTo: " + delivered + "\r\nSubject: net/smtp\r\nIdempotency-Key: netsmtp-1\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nHello\r\n" +
		"--b\r\nContent-Type: text/csv\r\nContent-Disposition: attachment; filename=\"r.csv\"\r\n\r\na,b\r\n--b--\r\n")
	// STARTTLS on the submission port: net/smtp upgrades when offered and
	// verifies the certificate.
	c, err := smtp.Dial(a.SubmissionAddr())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartTLS(&tls.Config{RootCAs: pool, ServerName: "localhost"}); err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	if err := c.Auth(smtp.PlainAuth("", "apikey", a.Key, "127.0.0.1")); err != nil {
		t.Fatalf("AUTH: %v", err)
	}
	if err := c.Mail(sandbox); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt(delivered); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	w.Write(msg)
	if err := w.Close(); err != nil {
		t.Fatalf("DATA: %v", err)
	}
	c.Quit()

	// Implicit TLS on the other listener, and the same idempotency key:
	// the first email again, not a second.
	tc, err := tls.Dial("tcp", a.SubmissionTLSAddr(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := smtp.NewClient(tc, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Auth(smtp.PlainAuth("", "apikey", a.Key, "localhost")); err != nil {
		t.Fatalf("AUTH over implicit TLS: %v", err)
	}
	if err := c2.Mail(sandbox); err != nil {
		t.Fatal(err)
	}
	c2.Rcpt(delivered)
	w, _ = c2.Data()
	w.Write(msg)
	if err := w.Close(); err != nil {
		t.Fatalf("DATA: %v", err)
	}
	c2.Quit()

	r := a.Do(http.MethodGet, "/v1/emails", nil)
	var list struct {
		Data []map[string]any `json:"data"`
	}
	r.Decode(t, &list)
	if len(list.Data) != 1 || list.Data[0]["subject"] != "net/smtp" {
		t.Fatalf("emails %s", r.Body)
	}

	// Plain text on loopback (development): net/smtp sends PLAIN to a
	// localhost server without TLS.
	pa := start(t)
	host, port, _ := net.SplitHostPort(pa.SubmissionAddr())
	_ = host
	if err := smtp.SendMail("localhost:"+port, smtp.PlainAuth("", "dev", pa.Key, "localhost"), sandbox, []string{delivered},
		[]byte("From: "+sandbox+"\r\nTo: "+delivered+"\r\nSubject: plain\r\n\r\nHi\r\n")); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
}

// TestSubmitLoginAndRateLimit: AUTH LOGIN (user name, then the key), and
// the key's per-minute rate limit applies to messages as to requests: past
// it, 451 4.7.0 and nothing booked.
func TestSubmitLoginAndRateLimit(t *testing.T) {
	a := start(t, testapp.WithEnv("MAILROOM_RATE_LIMIT", "2"))
	c := dial(t, a.SubmissionAddr())
	c.cmd("EHLO client.example", "250")
	c.cmd("AUTH LOGIN", "334")
	c.cmd(base64.StdEncoding.EncodeToString([]byte("anyone")), "334")
	c.cmd(base64.StdEncoding.EncodeToString([]byte(a.Key)), "235")
	// The limit is per minute window: two messages, or four when a window
	// ends between them, pass; the next is refused.
	for i := 0; ; i++ {
		reply := c.send(sandbox, []string{delivered}, message("", "again"))
		if strings.HasPrefix(reply, "451 4.7.0 rate_limited") {
			break
		}
		if idOf(t, reply); i >= 4 {
			t.Fatalf("message %d past a limit of 2 a minute: %q", i+1, reply)
		}
	}
}
