package outbound

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// readLog is a go-smtp server's listener whose connections note what
// each read brought in. Every read first waits a moment, so whatever the
// client wrote without waiting for a reply is there to be read together.
type readLog struct {
	net.Listener
	mu       sync.Mutex
	reads    []string
	sessions int
}

func (l *readLog) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.sessions++
	l.mu.Unlock()
	return &loggedConn{Conn: c, log: l}, nil
}

func (l *readLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reads...)
}

type loggedConn struct {
	net.Conn
	log *readLog
}

func (c *loggedConn) Read(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.log.mu.Lock()
		c.log.reads = append(c.log.reads, string(p[:n]))
		c.log.mu.Unlock()
	}
	return n, err
}

// pipeSession refuses MAIL from refuse@ and RCPT to refuse@, and keeps
// each message it takes.
type pipeSession struct {
	mu   *sync.Mutex
	msgs *[][]byte
}

func (s pipeSession) Mail(from string, _ *smtp.MailOptions) error {
	if strings.HasPrefix(from, "refuse@") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "sender refused"}
	}
	return nil
}

func (s pipeSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasPrefix(to, "refuse@") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	return nil
}

func (s pipeSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	*s.msgs = append(*s.msgs, b)
	s.mu.Unlock()
	return nil
}

func (pipeSession) Reset()        {}
func (pipeSession) Logout() error { return nil }

// startGoSMTP starts a go-smtp server (which offers PIPELINING and
// CHUNKING) behind a readLog.
func startGoSMTP(t *testing.T) (*readLog, func() [][]byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs [][]byte
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return pipeSession{&mu, &msgs}, nil }))
	srv.Domain = "sink.test"
	log := &readLog{Listener: ln}
	go func() { _ = srv.Serve(log) }()
	t.Cleanup(func() { _ = srv.Close() })
	return log, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), msgs...)
	}
}

// At a server offering PIPELINING (RFC 2920) the envelope and a small
// message go as one group: the server's one read carries MAIL, every
// RCPT and BDAT with the message, and it takes the message.
func TestPipelinedAtGoSMTP(t *testing.T) {
	t.Parallel()
	log, msgs := startGoSMTP(t)
	r, err := NewRelay("smtp://"+log.Addr().String(), RelayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	data := []byte("Subject: pipelined\r\n\r\n.a line with a dot\r\n")
	res, err := r.Send(context.Background(), Envelope{From: "a@b.test", To: []string{"c@d.test", "e@f.test"}}, data)
	if err != nil || len(res.Rcpts) != 2 || !res.Rcpts[0].OK || !res.Rcpts[1].OK || res.Rcpts[0].Code != 250 {
		t.Fatalf("send: %+v %v", res, err)
	}
	if got := msgs(); len(got) != 1 || !bytes.Equal(got[0], data) {
		t.Fatalf("the server took %q", got)
	}
	group := ""
	for _, rd := range log.all() {
		if strings.Contains(rd, "MAIL FROM:") {
			group = rd
		}
	}
	want := "MAIL FROM:<a@b.test> BODY=8BITMIME SIZE=42\r\nRCPT TO:<c@d.test>\r\nRCPT TO:<e@f.test>\r\nBDAT 42 LAST\r\n" + string(data)
	if group != want {
		t.Fatalf("the read with MAIL carried %q, want the whole group %q", group, want)
	}
	var cmds []string
	for _, st := range res.Rcpts[1].Steps {
		cmds = append(cmds, st.Command)
	}
	if strings.Join(cmds, " ") != "CONNECT MAIL RCPT BDAT" {
		t.Errorf("steps %v", cmds)
	}
}

// Refusals within a group: a refused RCPT keeps its reply while the
// others are delivered; a refused MAIL, or every RCPT refused, sends
// nothing, answers every recipient with its refusal, and leaves the
// session fit for the next message.
func TestPipelinedRefusals(t *testing.T) {
	t.Parallel()
	log, msgs := startGoSMTP(t)
	r, err := NewRelay("smtp://"+log.Addr().String(), RelayOptions{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	data := []byte("Subject: x\r\n\r\nx\r\n")
	send := func(from string, to ...string) *Result {
		t.Helper()
		res, err := r.Send(context.Background(), Envelope{From: from, To: to}, data)
		if err != nil && !errors.As(err, new(*SendError)) {
			t.Fatalf("send from %s: %v", from, err)
		}
		return res
	}

	res := send("a@b.test", "refuse@d.test", "ok@d.test")
	if a, b := res.Rcpts[0], res.Rcpts[1]; a.OK || a.Code != 550 || a.Enhanced != "5.1.1" || a.Stage != StageRcpt || !b.OK || b.Stage != StageData {
		t.Fatalf("one refused: %+v", res.Rcpts)
	}
	res = send("refuse@b.test", "ok@d.test", "ok2@d.test")
	for _, rr := range res.Rcpts {
		if rr.OK || rr.Code != 550 || rr.Enhanced != "5.7.1" || rr.Message != "sender refused" || rr.Stage != StageMail || rr.Temporary {
			t.Fatalf("MAIL refused: %+v", res.Rcpts)
		}
	}
	res = send("a@b.test", "refuse@d.test")
	if rr := res.Rcpts[0]; rr.OK || rr.Code != 550 || rr.Stage != StageRcpt {
		t.Fatalf("every RCPT refused: %+v", res.Rcpts)
	}
	res = send("a@b.test", "ok@d.test")
	if !res.Rcpts[0].OK {
		t.Fatalf("after the refusals: %+v", res.Rcpts)
	}
	if got := msgs(); len(got) != 2 {
		t.Fatalf("the server took %d messages, want 2", len(got))
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.sessions != 1 {
		t.Fatalf("%d sessions, want the one throughout", log.sessions)
	}
}

// BenchmarkTransact is one message of 30 KB to one recipient over a
// reused session at an in-process go-smtp server (client and server
// counted), command by command and pipelined:
//
//	go test ./internal/outbound -run '^$' -bench Transact -benchmem
func BenchmarkTransact(b *testing.B) {
	for _, pipe := range []bool{false, true} {
		name := "stepwise"
		if pipe {
			name = "pipelined"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var mu sync.Mutex
			var msgs [][]byte
			srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return discardSession{pipeSession{&mu, &msgs}}, nil }))
			srv.Domain = "sink.test"
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			host, port, _ := net.SplitHostPort(ln.Addr().String())
			s := &session{helo: "localhost"}
			cn, err := s.open(context.Background(), ln.Addr().String(), host, port, host, "")
			if err != nil {
				b.Fatal(err)
			}
			cn.pipelining = pipe
			data := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstu\r\n"), 30<<10/70)
			env := Envelope{From: "bounces@b.test", To: []string{"c@d.test"}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				out, err := transact(cn, ln.Addr().String(), env, data)
				if err != nil || !out[0].OK {
					b.Fatalf("%+v %v", out, err)
				}
				cn.msgs++
			}
		})
	}
}

// discardSession drops each message unread past what go-smtp needs.
type discardSession struct{ pipeSession }

func (discardSession) Data(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
