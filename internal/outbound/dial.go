package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// session opens greeted SMTP sessions: TCP (or implicit TLS), EHLO,
// STARTTLS when offered, AUTH PLAIN when credentials are set.
type session struct {
	helo           string
	tls            *tls.Config // STARTTLS or implicit TLS config; ServerName filled per host
	implicitTLS    bool
	opportunistic  bool // a TLS failure falls back to plaintext instead of failing
	user, pass     string
	dialTimeout    time.Duration
	commandTimeout time.Duration

	// noTLS remembers hosts (host:port) that do not offer STARTTLS or failed
	// the handshake, so each new session there does not pay a failed try.
	noTLS sync.Map
}

var errNoStartTLS = errors.New("outbound: server does not offer STARTTLS")

// open connects to ip:port and greets as serverName (used for TLS
// verification and SNI); key identifies the destination for noTLS.
func (s *session) open(ctx context.Context, key, ip, port, serverName string) (*smtp.Client, error) {
	d := net.Dialer{Timeout: s.dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
	if err != nil {
		return nil, err
	}
	// Greeting and EHLO block on the server; a cancelled ctx must end them.
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()

	cfg := s.tlsConfig(serverName)
	var c *smtp.Client
	switch {
	case s.implicitTLS:
		c = s.newClient(tls.Client(nc, cfg))
	case s.tls == nil:
		c = s.newClient(nc)
	default:
		if _, skip := s.noTLS.Load(key); skip {
			if !s.plaintextOK(ip) {
				_ = nc.Close()
				return nil, errNoStartTLS
			}
			c = s.newClient(nc)
			break
		}
		c, err = smtp.NewClientStartTLS(nc, cfg)
		if err != nil {
			// NewClientStartTLS closed nc. A server that simply lacks STARTTLS
			// answered EHLO fine: retry in plaintext and remember.
			if strings.Contains(err.Error(), "doesn't support STARTTLS") {
				s.noTLS.Store(key, true)
				if !s.plaintextOK(ip) {
					return nil, errNoStartTLS
				}
				return s.open(ctx, key, ip, port, serverName)
			}
			return nil, err
		}
		s.setTimeouts(c)
	}
	// After STARTTLS the session restarts, so this EHLO carries our real
	// name; it is also where the TLS handshake happens.
	if err := c.Hello(s.helo); err != nil {
		_ = c.Close()
		if s.tls != nil && !s.implicitTLS && s.opportunistic && isTLSError(err) {
			s.noTLS.Store(key, true)
			return s.open(ctx, key, ip, port, serverName)
		}
		return nil, err
	}
	if s.user != "" {
		if err := c.Auth(sasl.NewPlainClient("", s.user, s.pass)); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if ctx.Err() != nil {
		_ = c.Close()
		return nil, ctx.Err()
	}
	return c, nil
}

// plaintextOK says whether a session may go on without TLS: never when it
// would carry the relay password off this machine.
func (s *session) plaintextOK(ip string) bool {
	if s.opportunistic || s.user == "" {
		return true
	}
	if strings.EqualFold(ip, "localhost") {
		return true
	}
	addr := net.ParseIP(ip)
	return addr != nil && addr.IsLoopback()
}

func (s *session) newClient(nc net.Conn) *smtp.Client {
	c := smtp.NewClient(nc)
	s.setTimeouts(c)
	return c
}

func (s *session) setTimeouts(c *smtp.Client) {
	if s.commandTimeout > 0 {
		c.CommandTimeout = s.commandTimeout
		c.SubmissionTimeout = 2 * s.commandTimeout
	}
}

func (s *session) tlsConfig(serverName string) *tls.Config {
	if s.tls == nil {
		return nil
	}
	cfg := s.tls.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = serverName
	}
	return cfg
}

func isTLSError(err error) bool {
	var (
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
		certErr *tls.CertificateVerificationError
	)
	return errors.As(err, &recErr) || errors.As(err, &alert) || errors.As(err, &certErr) ||
		strings.Contains(err.Error(), "tls:")
}
