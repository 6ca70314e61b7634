// Package smtpin is Mailroom's inbound SMTP listener (RFC 5321 server side,
// go-smtp). For now it takes only what the delivery engine needs back:
// mail to a VERP bounce address (bounces+<email id>@<any domain>) and to
// the feedback-loop address (fbl@<any domain>), which carry delivery status
// notifications (RFC 3464) and abuse reports (RFC 5965). Every other
// recipient is refused at RCPT with 550 5.1.1; the inbound mail product
// will widen this.
package smtpin

import (
	"context"
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

	"mailroom/internal/outbound"
)

// Handler receives the reports. verpID is the email id from a bounce
// address, "" for the feedback address. A returned error is answered with
// a temporary failure so the sender tries again.
type Handler interface {
	HandleReport(ctx context.Context, verpID string, raw []byte) error
}

// FeedbackLocalPart is the local part of the feedback-loop address that
// providers are given (fbl@<service or sending domain>).
const FeedbackLocalPart = "fbl"

// Options configure a Server.
type Options struct {
	Addr     string // host:port to listen on; "" turns the listener off
	Domain   string // name in the greeting
	Handler  Handler
	Log      *slog.Logger
	MaxBytes int64 // largest message accepted; default 10 MB (reports quote at most the original)

	UnsubscribeAddress string          // mailto unsubscribe address ("" = none); see unsubscribe.go
	Unsubscribe        UnsubscribeFunc // acts on mail to it
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
		opts.MaxBytes = 10 << 20
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s}, nil
	}))
	srv.Domain = opts.Domain
	srv.MaxMessageBytes = opts.MaxBytes
	srv.MaxRecipients = 100
	srv.ReadTimeout = 5 * time.Minute
	srv.WriteTimeout = 5 * time.Minute
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv = srv
	return s
}

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
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
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
	ids  []string // VERP ids of accepted recipients; "" for the feedback address
	seen map[string]bool

	unsubscribe bool // a recipient was the unsubscribe address
}

var _ smtp.Session = (*session)(nil)

var errNoSuchUser = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}

// Mail accepts any sender: bounces come from the null sender <>.
func (ss *session) Mail(string, *smtp.MailOptions) error { return nil }

// Rcpt accepts bounce and feedback addresses only.
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.rcptUnsubscribe(to) {
		return nil
	}
	id, ok := recipient(to)
	if !ok {
		return errNoSuchUser
	}
	if ss.seen == nil {
		ss.seen = map[string]bool{}
	}
	if !ss.seen[id] {
		ss.seen[id] = true
		ss.ids = append(ss.ids, id)
	}
	return nil
}

// recipient reports whether to is one Mailroom takes, and the VERP id in it.
func recipient(to string) (verpID string, ok bool) {
	to = strings.ToLower(strings.TrimSpace(to))
	at := strings.LastIndexByte(to, '@')
	if at <= 0 || at == len(to)-1 {
		return "", false
	}
	if to[:at] == FeedbackLocalPart {
		return "", true
	}
	if !strings.HasPrefix(to, "bounces+") {
		return "", false
	}
	return outbound.ParseVERP(to)
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ss.dataUnsubscribe(raw)
	for _, id := range ss.ids {
		if err := ss.s.opts.Handler.HandleReport(ctx, id, raw); err != nil {
			ss.s.opts.Log.Warn("could not record a report; asked the sender to retry", "err", err)
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary failure, try again later"}
		}
	}
	return nil
}

func (ss *session) Reset() { ss.ids, ss.seen, ss.unsubscribe = nil, nil, false }

func (ss *session) Logout() error { return nil }
