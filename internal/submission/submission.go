// Package submission is Mailroom's SMTP submission listener (RFC 6409 on
// go-smtp; AUTH RFC 4954 with PLAIN RFC 4616 and LOGIN, STARTTLS RFC 3207,
// implicit TLS RFC 8314, SIZE RFC 1870, ENHANCEDSTATUSCODES RFC 3463). A
// client authenticates with any user name and an API key carrying mail:send
// as the password; each message is turned into a send request and booked by
// the sending service exactly as POST /v1/emails books it, so the same rules,
// idempotency and commit apply. 250 is answered after the commit and names
// the email id.
package submission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"mailroom/internal/mailmetrics"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"mailroom/internal/ratelimit"
	"mailroom/internal/sending"
	"mailroom/internal/smtplimit"
	"mailroom/internal/workspaces"
)

// Sender books a send request (the sending service).
type Sender interface {
	SendWith(ctx context.Context, c sending.Caller, raw []byte, o sending.SendOptions) (sending.Outcome, error)
}

// Keys resolves API keys (the workspaces service).
type Keys interface {
	Authenticate(ctx context.Context, secret string) (*workspaces.Key, error)
	AuthenticateForSend(ctx context.Context, secret string) (*workspaces.Key, error)
}

var (
	_ Sender = (*sending.Service)(nil)
	_ Keys   = (*workspaces.Service)(nil)
)

// Options configure a Server.
type Options struct {
	Addr    string      // host:port with STARTTLS (when TLS is set); "" for none
	TLSAddr string      // host:port with implicit TLS; "" for none (needs TLS)
	TLS     *tls.Config // certificate for STARTTLS and implicit TLS
	Domain  string      // name in the greeting
	Sender  Sender
	Keys    Keys
	// Limiter and KeyLimit are the API's per-key rate limit: each message
	// counts as one request against the key's budget.
	Limiter  ratelimit.Limiter
	KeyLimit int
	Log      *slog.Logger
	MaxBytes int64         // largest message; default sending.MaxMessageSize (40 MB)
	Timeout  time.Duration // idle timeout (restarted only by progress, smtplimit.Progress) and write timeout; default 2 minutes
	// Each listener's caps, as the inbound listener's (smtplimit.Caps, with
	// its defaults); an authenticated session gets ten times the commands,
	// for a client sending many messages on one session.
	Caps smtplimit.Caps
	// Meter counts submitted messages by outcome; nil counts nothing.
	Meter *mailmetrics.Meter
	// DiskFull reports that the node's disk is nearly full
	// (diskguard.Guard.Full): MAIL and RCPT are answered 452 4.3.1. Nil: never.
	DiskFull func() bool
}

// Server is the submission listener; Start and Stop make it a background
// part of the node.
type Server struct {
	opts Options
	srv  *smtp.Server

	mu   sync.Mutex
	lns  []net.Listener
	done chan struct{}
}

func (s *Server) diskFull() bool { return s.opts.DiskFull != nil && s.opts.DiskFull() }

// New returns a stopped server.
func New(opts Options) *Server {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = sending.MaxMessageSize
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	opts.Caps = opts.Caps.WithDefaults()
	s := &Server{opts: opts}
	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = opts.Domain
	srv.MaxMessageBytes = opts.MaxBytes
	srv.MaxRecipients = sending.MaxRecipients
	srv.ReadTimeout = opts.Timeout
	srv.WriteTimeout = opts.Timeout
	srv.MaxSessionDuration = opts.Caps.MaxDuration
	srv.Command = smtplimit.Commands(s.commandBudget)
	srv.TLSConfig = opts.TLS
	// Each session decides: AUTH is offered over TLS, or in plain text to a
	// loopback client only (development); see session.AuthMechanisms.
	srv.AllowInsecureAuth = true
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv = srv
	return s
}

// Start listens and serves in the background.
func (s *Server) Start(ctx context.Context) error {
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	if s.opts.Addr != "" {
		ln, err := net.Listen("tcp", s.opts.Addr)
		if err != nil {
			return fmt.Errorf("listening on MAILROOM_SUBMISSION_ADDR %s: %w", s.opts.Addr, err)
		}
		lns = append(lns, smtplimit.Listen(ln, s.limits(false)))
	}
	if s.opts.TLSAddr != "" {
		if s.opts.TLS == nil {
			closeAll()
			return errors.New("MAILROOM_SUBMISSION_TLS_ADDR needs a certificate (MAILROOM_SMTP_TLS_CERT and MAILROOM_SMTP_TLS_KEY)")
		}
		ln, err := net.Listen("tcp", s.opts.TLSAddr)
		if err != nil {
			closeAll()
			return fmt.Errorf("listening on MAILROOM_SUBMISSION_TLS_ADDR %s: %w", s.opts.TLSAddr, err)
		}
		// Counted under TLS, so a refusal costs no handshake.
		lns = append(lns, tls.NewListener(smtplimit.Listen(ln, s.limits(true)), s.opts.TLS))
	}
	if len(lns) == 0 {
		return nil
	}
	s.mu.Lock()
	s.lns, s.done = lns, make(chan struct{})
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.srv.Serve(ln); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
				s.opts.Log.Error("submission listener stopped", "err", err)
			}
		}()
		s.opts.Log.Info("smtp submission listening", "addr", ln.Addr().String())
	}
	go func() { wg.Wait(); close(s.done) }()
	return nil
}

// limits are one listener's caps; quiet for implicit TLS, whose client
// expects a handshake rather than a 421.
func (s *Server) limits(quiet bool) smtplimit.Limits {
	return smtplimit.Limits{MaxSessions: s.opts.Caps.MaxSessions, PerIP: s.opts.Caps.PerIP, Quiet: quiet}
}

// commandBudget is a session's command budget: ten times larger once it
// has authenticated, for a client submitting many messages on one session.
func (s *Server) commandBudget(c *smtp.Conn) int {
	if ss, ok := c.Session().(*session); ok && ss.secret != "" {
		return 10 * s.opts.Caps.MaxCommands
	}
	return s.opts.Caps.MaxCommands
}

// Addr is the STARTTLS (or loopback plain) listener's address, "" when off.
func (s *Server) Addr() string { return s.addr(s.opts.Addr != "", 0) }

// TLSAddr is the implicit-TLS listener's address, "" when off.
func (s *Server) TLSAddr() string {
	if s.opts.TLSAddr == "" {
		return ""
	}
	i := 0
	if s.opts.Addr != "" {
		i = 1
	}
	return s.addr(true, i)
}

func (s *Server) addr(on bool, i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on || i >= len(s.lns) {
		return ""
	}
	return s.lns[i].Addr().String()
}

// Stop lets sessions finish their current message (until ctx is done) and
// closes the listeners. A second call does nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	lns, done := s.lns, s.done
	s.lns = nil
	s.mu.Unlock()
	if lns == nil {
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
