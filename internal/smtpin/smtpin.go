// Package smtpin is Mailroom's inbound SMTP listener (RFC 5321 server side,
// go-smtp; SIZE RFC 1870, STARTTLS RFC 3207, ENHANCEDSTATUSCODES RFC 2034).
// Each RCPT address is routed once, in order: a signed VERP bounce address
// (bounces+<email id>-<tag>@<any domain>, outbound.VERP) or the feedback-loop address
// (fbl@<any domain>) goes to the delivery engine's report handler (delivery
// status notifications, RFC 3464; abuse reports, RFC 5965); otherwise each
// Router in Options.Routers is asked (special addresses first, then the
// inbound area's mailboxes). An address nobody takes, and a bounce address
// whose tag does not verify, is refused with 550 5.1.1. A message is
// answered 250 only after every recipient's Deliver returned, which stores
// it durably. A message past msglimit's limits (a header block over 256 KB,
// multiparts nested over 50 deep or over 1,000 parts) is refused 552/554
// before any recipient reads it.
package smtpin

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"mailroom/internal/mailauth"
	"mailroom/internal/msglimit"
	"mailroom/internal/outbound"
	"mailroom/internal/smtplimit"
	"mailroom/internal/store"
)

// Handler receives the reports. verpID is the email id from a bounce
// address whose tag verified, "" for the feedback address; from is the
// client, for the handler's SPF check. A returned error is answered with
// a temporary failure so the sender tries again. raw is the listener's
// buffer, used again for the next message once the call returns: a
// handler copies what it keeps.
type Handler interface {
	HandleReport(ctx context.Context, verpID string, from mailauth.Sender, raw []byte) error
}

// FeedbackLocalPart is the local part of the feedback-loop address that
// providers are given (fbl@<service or sending domain>).
const FeedbackLocalPart = "fbl"

// Envelope is what the SMTP transaction tells about a message.
type Envelope struct {
	RemoteIP net.IP // the connecting client's address
	Helo     string // the name it gave in EHLO/HELO
	MailFrom string // the reverse path; "" for the null sender <>
	Rcpt     string // the recipient address this copy is delivered for
	TLS      bool   // the session ran STARTTLS
}

// Recipient takes the messages for one accepted RCPT address. Deliver
// returns once the message is stored durably; an error is answered with a
// temporary failure (451) so the sender tries again. raw is the
// listener's buffer, used again for the next message once Deliver
// returns: a recipient copies what it keeps (stored rows are copies).
type Recipient interface {
	Deliver(ctx context.Context, env Envelope, raw []byte) error
	// Key names where the copy goes: RCPTs with one key get one copy
	// (a+x@ and a+y@ reach one mailbox once).
	Key() string
}

// Router finds the Recipient for an RCPT address: nil, nil when the address
// is not its own (the next router is asked). An error answers 451.
type Router interface {
	Route(ctx context.Context, rcpt string) (Recipient, error)
}

// Options configure a Server.
type Options struct {
	Addr    string // host:port to listen on; "" turns the listener off
	Domain  string // name in the greeting
	Handler Handler
	// VERP checks the tag of bounce addresses; without it every bounces+
	// address is refused.
	VERP *outbound.VERP
	// Routers are asked in order for every RCPT that is not a report
	// address; the first that answers a Recipient takes it.
	Routers       []Router
	Log           *slog.Logger
	MaxBytes      int64         // largest message accepted (SIZE); default 40 MB
	MaxRecipients int           // RCPTs per message; default 50
	Timeout       time.Duration // idle timeout, restarted only by progress (smtplimit.Progress), and write timeout; default 2 minutes
	TLS           *tls.Config   // offers STARTTLS when set
	// Caps are the sessions at once, in all and from one client, a
	// session's lifetime and its commands (smtplimit.Caps, with its defaults).
	Caps smtplimit.Caps
	// DiskFull reports that the node's disk is nearly full
	// (diskguard.Guard.Full): MAIL and RCPT are answered 452 4.3.1 and the
	// sender tries again later. Nil: never.
	DiskFull func() bool
}

// Server is the listener; Start and Stop make it a background part of the
// node.
type Server struct {
	opts Options
	srv  *smtp.Server

	mu   sync.Mutex
	ln   net.Listener
	done chan struct{}
}

// New returns a stopped server.
func New(opts Options) *Server {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 40 << 20
	}
	if opts.MaxRecipients == 0 {
		opts.MaxRecipients = 50
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	opts.Caps = opts.Caps.WithDefaults()
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		ss := &session{s: s, env: Envelope{Helo: c.Hostname()}}
		if addr, ok := c.Conn().RemoteAddr().(*net.TCPAddr); ok {
			ss.env.RemoteIP = addr.IP
		}
		_, ss.env.TLS = c.TLSConnectionState()
		return ss, nil
	}))
	srv.Domain = opts.Domain
	srv.MaxMessageBytes = opts.MaxBytes
	srv.MaxRecipients = opts.MaxRecipients
	srv.ReadTimeout = opts.Timeout
	srv.WriteTimeout = opts.Timeout
	srv.MaxSessionDuration = opts.Caps.MaxDuration
	srv.Command = smtplimit.Commands(func(*smtp.Conn) int { return opts.Caps.MaxCommands })
	srv.TLSConfig = opts.TLS
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv = srv
	return s
}

func (s *Server) diskFull() bool { return s.opts.DiskFull != nil && s.opts.DiskFull() }

// Start listens and serves in the background.
func (s *Server) Start(ctx context.Context) error {
	if s.opts.Addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("listening on MAILROOM_SMTP_ADDR %s: %w", s.opts.Addr, err)
	}
	s.mu.Lock()
	s.ln, s.done = ln, make(chan struct{})
	s.mu.Unlock()
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(smtplimit.Listen(ln, smtplimit.Limits{MaxSessions: s.opts.Caps.MaxSessions, PerIP: s.opts.Caps.PerIP})); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
			s.opts.Log.Error("smtp listener stopped", "err", err)
		}
	}()
	s.opts.Log.Info("smtp listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the address the listener is bound to ("" when off).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stop lets sessions end (until ctx is done) and closes the listener. A
// second call does nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	ln, done := s.ln, s.done
	s.ln = nil
	s.mu.Unlock()
	if ln == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-done
	if errors.Is(err, smtp.ErrServerClosed) {
		err = nil
	}
	return err
}

type session struct {
	s    *Server
	env  Envelope
	rcpt []accepted
	seen map[string]bool
	size int64 // the size MAIL FROM declared (SIZE=, RFC 1870), 0 for none
}

// accepted is one RCPT taken: the report handler's VERP id (report true),
// or a routed recipient.
type accepted struct {
	addr     string
	report   bool
	verpID   string
	delivery Recipient
}

var _ smtp.Session = (*session)(nil)

var errNoSuchUser = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}

// errStorageFull is Postfix's answer when its queue's disk is low (RFC
// 3463 X.3.1, "mail system full"): a temporary refusal.
var errStorageFull = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "Insufficient system storage"}

var errTryLater = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary failure, try again later"}

// Mail accepts any sender: bounces come from the null sender <>.
func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	if ss.s.diskFull() {
		return errStorageFull
	}
	ss.env.MailFrom = from
	if opts != nil {
		ss.size = opts.Size // go-smtp refused it past MaxMessageBytes
	}
	return nil
}

// Rcpt routes the address: report addresses first, then each router.
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.s.diskFull() {
		return errStorageFull
	}
	if ss.seen == nil {
		ss.seen = map[string]bool{}
	}
	id, ok := recipient(ss.s.opts.VERP, to)
	if !ok && outbound.IsVERP(to) {
		// Not a return path Mailroom wrote (forged, or unsigned from
		// before tags): a truthful "no such user" costs the sender nothing
		// and saves reading a message that would be dropped.
		ss.s.opts.Log.Info("refused a bounce address whose tag does not verify", "rcpt", to)
		return errNoSuchUser
	}
	if ok {
		if !ss.seen["report:"+id] {
			ss.seen["report:"+id] = true
			ss.rcpt = append(ss.rcpt, accepted{addr: to, report: true, verpID: id})
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range ss.s.opts.Routers {
		d, err := r.Route(ctx, to)
		if err != nil {
			ss.s.opts.Log.Warn("could not route a recipient; asked the sender to retry", "err", err)
			return errTryLater
		}
		if d == nil {
			continue
		}
		if !ss.seen[d.Key()] {
			ss.seen[d.Key()] = true
			ss.rcpt = append(ss.rcpt, accepted{addr: to, delivery: d})
		}
		return nil
	}
	return errNoSuchUser
}

// recipient reports whether to is a report address Mailroom takes, and
// the email id of a bounce address whose tag verifies.
func recipient(verp *outbound.VERP, to string) (verpID string, ok bool) {
	to = strings.ToLower(strings.TrimSpace(to))
	at := strings.LastIndexByte(to, '@')
	if at <= 0 || at == len(to)-1 {
		return "", false
	}
	if to[:at] == FeedbackLocalPart {
		return "", true
	}
	return verp.Parse(to)
}

// Data reads the message and hands it to every accepted recipient; 250 is
// answered only when all of them have stored it.
func (ss *session) Data(r io.Reader) error {
	// Sized by SIZE= when the client declared it (most MTAs do), else grown
	// by doubling from 64 KiB: each step copies and clears the message
	// again. The buffer is the last message's when one is free: every
	// recipient has stored the message (or copied what it keeps) when Data
	// returns.
	b := dataBuffers.Get().(*bytes.Buffer)
	defer putDataBuffer(b)
	b.Grow(int(max(64<<10, ss.size+bytes.MinRead)))
	if _, err := b.ReadFrom(r); err != nil {
		return err
	}
	raw := b.Bytes()
	// Before DKIM or any parser: a huge header or deep nesting cost them
	// time in the square of its size (issue #38).
	if err := msglimit.Check(raw); err != nil {
		ss.s.opts.Log.Info("refused a message past a parsing limit", "err", err, "remote_ip", ss.env.RemoteIP.String())
		return Refusal(err)
	}
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, a := range ss.rcpt {
		if a.report {
			from := mailauth.Sender{IP: ss.env.RemoteIP, Helo: ss.env.Helo, MailFrom: ss.env.MailFrom}
			err = ss.s.opts.Handler.HandleReport(ctx, a.verpID, from, raw)
		} else {
			env := ss.env
			env.Rcpt = a.addr
			err = a.delivery.Deliver(ctx, env, raw)
		}
		if err != nil {
			ss.s.opts.Log.Warn("could not store a message; asked the sender to retry", "err", err)
			if store.IsDiskFull(err) {
				return errStorageFull
			}
			return errTryLater
		}
	}
	return nil
}

// dataBuffers hold messages while Data hands them over: a 160 KB message
// read into a new buffer cost 160 KB allocated and cleared per message
// (issue #47). A buffer past maxPooledData is left to the collector, so
// one huge message does not stay in memory.
var dataBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledData = 4 << 20

func putDataBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledData {
		return
	}
	b.Reset()
	dataBuffers.Put(b)
}

// Refusal is the SMTP reply to a msglimit error (nil for another error),
// for every SMTP server of the node.
func Refusal(err error) *smtp.SMTPError {
	var le *msglimit.Error
	if !errors.As(err, &le) {
		return nil
	}
	return &smtp.SMTPError{Code: le.Code, EnhancedCode: smtp.EnhancedCode(le.Enhanced), Message: le.Text}
}

func (ss *session) Reset() {
	ss.rcpt, ss.seen, ss.size = nil, nil, 0
	ss.env.MailFrom = ""
}

func (ss *session) Logout() error { return nil }
