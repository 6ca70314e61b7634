// Package smtpsink is a real SMTP server (go-smtp) on 127.0.0.1 for tests.
//
// It records every accepted message and decides the fate of each recipient
// from its local part, so tests can provoke the outcomes a delivery path must
// handle without a mock:
//
//   - local part contains "reject": 550 5.1.1 at RCPT (permanent)
//   - local part contains "defer":  451 4.7.1 at RCPT (temporary)
//   - local part contains "drop":   the connection is closed at RCPT
//
// Everything else is accepted. The sink is cheap enough for thousands of
// messages over many concurrent connections.
package smtpsink

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message accepted by the sink.
type Message struct {
	From     string
	To       []string
	Data     []byte
	Received time.Time
	TLS      bool   // the session was encrypted (STARTTLS or implicit TLS)
	Remote   string // the client's address (ip:port): which source it sent from
}

// Option configures a Sink.
type Option func(*config)

type config struct {
	user, pass  string
	tls         *tls.Config
	implicitTLS bool
	handler     func(from string, to []string, data []byte) error
	mailRule    func(from string) error
	rcptRule    func(to string) error
}

// WithMailRule answers MAIL FROM: a non-nil error (an *smtp.SMTPError
// keeps its code) refuses the sender.
func WithMailRule(f func(from string) error) Option {
	return func(c *config) { c.mailRule = f }
}

// WithRcptRule is asked first at RCPT TO: a non-nil error refuses the
// recipient with it; nil falls through to the local-part rules.
func WithRcptRule(f func(to string) error) Option {
	return func(c *config) { c.rcptRule = f }
}

// Helo is one EHLO or HELO the sink answered.
type Helo struct {
	Name   string
	TLS    bool // said inside TLS (after STARTTLS, or implicit TLS)
	Remote string
}

// WithAuth makes the sink require AUTH PLAIN with these credentials before
// MAIL FROM. Insecure (non-TLS) auth is allowed because the sink listens on
// loopback only.
func WithAuth(user, pass string) Option {
	return func(c *config) { c.user, c.pass = user, pass }
}

// WithTLS makes the sink offer STARTTLS with cfg (see SelfSigned).
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg }
}

// WithImplicitTLS makes the sink speak TLS from the first byte (smtps, port
// 465 style) with cfg.
func WithImplicitTLS(cfg *tls.Config) Option {
	return func(c *config) { c.tls, c.implicitTLS = cfg, true }
}

// WithHandler is called for every message after the recipient rules; a
// non-nil error is returned to the client at DATA (an *smtp.SMTPError keeps
// its code) and the message is not recorded.
func WithHandler(h func(from string, to []string, data []byte) error) Option {
	return func(c *config) { c.handler = h }
}

// Sink is a running SMTP server.
type Sink struct {
	cfg  config
	srv  *smtp.Server
	ln   net.Listener
	host string
	port int

	mu      sync.Mutex
	msgs    []Message
	helos   []Helo
	changed chan struct{} // closed and replaced on every new message
}

// Start listens on 127.0.0.1:0 and serves until the test ends.
func Start(t testing.TB, opts ...Option) *Sink {
	t.Helper()
	s := &Sink{changed: make(chan struct{})}
	for _, o := range opts {
		o(&s.cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtpsink: listen: %v", err)
	}
	if s.cfg.implicitTLS {
		ln = tls.NewListener(ln, s.cfg.tls)
	}
	s.ln = ln
	addr := ln.Addr().(*net.TCPAddr)
	s.host, s.port = "127.0.0.1", addr.Port

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = "sink.localhost"
	srv.AllowInsecureAuth = true
	srv.MaxMessageBytes = 64 << 20
	srv.MaxRecipients = 10000
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	if s.cfg.tls != nil && !s.cfg.implicitTLS {
		srv.TLSConfig = s.cfg.tls
	}
	s.srv = srv
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// Addr is host:port of the listener.
func (s *Sink) Addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// Host is the listener's IP address as a string.
func (s *Sink) Host() string { return s.host }

// Port is the listener's TCP port.
func (s *Sink) Port() int { return s.port }

// Count is the number of messages accepted so far.
func (s *Sink) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// Messages returns a copy of the messages accepted so far, in arrival order.
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// WaitFor waits until at least n messages arrived or timeout passed, and
// returns what it has either way; callers assert on the length.
func (s *Sink) WaitFor(n int, timeout time.Duration) []Message {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.msgs) >= n {
			out := append([]Message(nil), s.msgs...)
			s.mu.Unlock()
			return out
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return s.Messages()
		}
	}
}

// WaitMatch waits until a message for which match holds arrived, or
// timeout passed (false), woken by each arrival rather than polling.
func (s *Sink) WaitMatch(timeout time.Duration, match func(Message) bool) (Message, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		s.mu.Lock()
		msgs, ch := s.msgs[seen:], s.changed
		s.mu.Unlock()
		for _, m := range msgs {
			if match(m) {
				return m, true
			}
		}
		seen += len(msgs)
		select {
		case <-ch:
		case <-deadline.C:
			return Message{}, false
		}
	}
}

func (s *Sink) record(m Message) {
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Helos returns the greetings seen so far, in order. go-smtp opens a
// session at the first EHLO and again at the first EHLO after STARTTLS,
// so this lists exactly those (a repeated EHLO inside one session is not
// listed).
func (s *Sink) Helos() []Helo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Helo(nil), s.helos...)
}

func (s *Sink) newSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	s.mu.Lock()
	s.helos = append(s.helos, Helo{Name: c.Hostname(), TLS: isTLS, Remote: c.Conn().RemoteAddr().String()})
	s.mu.Unlock()
	return &session{sink: s, conn: c}, nil
}

type session struct {
	sink   *Sink
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
}

var _ smtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string {
	if ss.sink.cfg.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain || ss.sink.cfg.user == "" {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if user != ss.sink.cfg.user || pass != ss.sink.cfg.pass {
			return smtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.sink.cfg.user != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	if r := ss.sink.cfg.mailRule; r != nil {
		if err := r(from); err != nil {
			return err
		}
	}
	ss.from = from
	ss.to = ss.to[:0]
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if r := ss.sink.cfg.rcptRule; r != nil {
		if err := r(to); err != nil {
			return err
		}
	}
	local := strings.ToLower(to)
	if i := strings.LastIndexByte(local, '@'); i >= 0 {
		local = local[:i]
	}
	switch {
	case strings.Contains(local, "drop"):
		_ = ss.conn.Conn().Close()
		return errors.New("connection dropped")
	case strings.Contains(local, "reject"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}
	case strings.Contains(local, "defer"):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "Try again later"}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	to := append([]string(nil), ss.to...)
	if h := ss.sink.cfg.handler; h != nil {
		if err := h(ss.from, to, data); err != nil {
			return err
		}
	}
	_, isTLS := ss.conn.TLSConnectionState()
	ss.sink.record(Message{From: ss.from, To: to, Data: data, Received: time.Now(), TLS: isTLS, Remote: ss.conn.Conn().RemoteAddr().String()})
	return nil
}

func (ss *session) Reset() {
	ss.from = ""
	ss.to = nil
}

func (ss *session) Logout() error { return nil }
