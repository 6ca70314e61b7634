package submission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"mailroom/internal/apierr"
	"mailroom/internal/msglimit"
	"mailroom/internal/sending"
	"mailroom/internal/workspaces"
)

type session struct {
	s        *Server
	tls      bool
	loopback bool
	secret   string // the API key presented at AUTH ("" before)
	mailFrom string
	rcpts    []string
	remote   string
}

var _ smtp.AuthSession = (*session)(nil)

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	ss := &session{s: s}
	_, ss.tls = c.TLSConnectionState()
	if addr, ok := c.Conn().RemoteAddr().(*net.TCPAddr); ok {
		ss.loopback = addr.IP.IsLoopback()
		ss.remote = addr.IP.String()
	}
	return ss, nil
}

// AuthMechanisms offers PLAIN and LOGIN over TLS, and in plain text only to
// a loopback client: an API key never crosses a network in the clear.
func (ss *session) AuthMechanisms() []string {
	if !ss.tls && !ss.loopback {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

// Auth checks the password as an API key with mail:send; the user name is
// not read (clients insist on sending one).
func (ss *session) Auth(mech string) (sasl.Server, error) {
	if !ss.tls && !ss.loopback {
		return nil, errTLSRequired
	}
	check := func(password string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		k, err := ss.s.opts.Keys.Authenticate(ctx, strings.TrimSpace(password))
		if err != nil {
			if e, ok := apierr.As(err); ok && e.Status < 500 {
				return errBadCredentials
			}
			return errTempFailure
		}
		if !k.HasScope(workspaces.ScopeSend) {
			return errBadCredentials
		}
		ss.secret = strings.TrimSpace(password)
		return nil
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, _, password string) error { return check(password) }), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.secret == "" {
		if !ss.tls && !ss.loopback {
			return errTLSRequired
		}
		return errAuthRequired
	}
	if ss.s.diskFull() {
		return errStorageFull
	}
	ss.mailFrom = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.secret == "" {
		return errAuthRequired
	}
	if ss.s.diskFull() {
		return errStorageFull
	}
	ss.rcpts = append(ss.rcpts, to)
	return nil
}

// Data reads the message, books it through the sending service and answers
// 250 with the email id once the service has committed it; each message
// gets one log line (envelope, size, reply; never the body or the key).
func (ss *session) Data(r io.Reader) error {
	var buf bytes.Buffer
	err := ss.data(r, &buf)
	code, text := 0, ""
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		code, text = se.Code, se.Message
	} else if err != nil {
		text = err.Error()
	}
	ok := code == 250
	ss.s.opts.Meter.Submission(ok)
	lvl := slog.LevelInfo
	if !ok {
		lvl = slog.LevelWarn
	}
	ss.s.opts.Log.Log(context.Background(), lvl, "submitted message", "remote_ip", ss.remote, "tls", ss.tls, "from", ss.mailFrom,
		"recipients", len(ss.rcpts), "size", buf.Len(), "code", code, "reply", text)
	return err
}

func (ss *session) data(r io.Reader, buf *bytes.Buffer) error {
	if _, err := buf.ReadFrom(r); err != nil {
		if errors.Is(err, smtp.ErrDataTooLarge) {
			return err
		}
		return errBadMessage("the message could not be read")
	}
	// Before the parser: a huge header or deep nesting is refused, not read
	// (issue #38).
	var le *msglimit.Error
	if err := msglimit.Check(buf.Bytes()); errors.As(err, &le) {
		return limitReply(le)
	}
	body, opts, err := buildRequest(buf.Bytes(), ss.mailFrom, ss.rcpts)
	if err != nil {
		return replyOf(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ss.s.opts.Timeout)
	defer cancel()
	// The key is read again for every message, so a revocation stops the
	// next message of an open session.
	k, err := ss.s.opts.Keys.AuthenticateForSend(ctx, ss.secret)
	if err != nil {
		return replyOf(err)
	}
	if err := ss.limit(ctx, k); err != nil {
		return err
	}
	out, err := ss.s.opts.Sender.SendWith(ctx, sending.CallerFor(k), body, opts)
	if err != nil {
		return replyOf(err)
	}
	return &smtp.SMTPError{Code: 250, EnhancedCode: smtp.EnhancedCode{2, 0, 0},
		Message: fmt.Sprintf("OK id=%s status=%s", out.ID, out.Status)}
}

// limit counts the message against the key's per-minute budget, as the
// HTTP API counts a request; a store outage lets the message through.
func (ss *session) limit(ctx context.Context, k *workspaces.Key) error {
	if ss.s.opts.Limiter == nil || ss.s.opts.KeyLimit <= 0 {
		return nil
	}
	res, err := ss.s.opts.Limiter.Allow(ctx, "key:"+k.ID, ss.s.opts.KeyLimit)
	if err != nil || res.Allowed {
		return nil
	}
	wait := int(res.RetryAfter(time.Now()) / time.Second)
	return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 0},
		Message: fmt.Sprintf("rate_limited: rate limit of %d messages per minute exceeded; retry after %d s", res.Limit, max(wait, 1))}
}

func (ss *session) Reset() {
	ss.mailFrom, ss.rcpts = "", nil
}

func (ss *session) Logout() error { return nil }

// loginServer is the LOGIN mechanism's server side (draft-murchison-sasl-
// login): it asks for the user name, then the password.
type loginServer struct {
	check func(password string) error
	step  int
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		l.step = 1
		if response == nil { // no initial response: ask for the user name
			return []byte("Username:"), false, nil
		}
		fallthrough
	case 1:
		l.step = 2
		return []byte("Password:"), false, nil
	default:
		return nil, true, l.check(string(response))
	}
}
