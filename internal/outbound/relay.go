package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"mailroom/internal/clock"
)

// RelayOptions tunes a relay (smarthost) transport. Zero values pick the
// defaults given per field.
type RelayOptions struct {
	// TLSConfig verifies the relay's certificate for STARTTLS and smtps.
	// Default: system roots, server name from the URL.
	TLSConfig *tls.Config
	// HeloName is the name sent in EHLO. Default "localhost".
	HeloName string
	// MaxConns caps concurrent sessions to the relay. Default 10.
	MaxConns int
	// MaxMessagesPerConn closes a session after this many messages.
	// Default 100.
	MaxMessagesPerConn int
	// IdleTimeout discards pooled sessions idle longer than this.
	// Default 30s.
	IdleTimeout time.Duration
	// DialTimeout bounds the TCP connect. Default 30s.
	DialTimeout time.Duration
	// CommandTimeout bounds each SMTP reply (twice that after DATA).
	// Default: go-smtp's 5 minutes (RFC 5321 section 4.5.3.2).
	CommandTimeout time.Duration
	// Clock times idle sessions. Default clock.Real.
	Clock clock.Clock
}

// Relay sends every message through one smarthost, all recipients in one
// transaction.
type Relay struct {
	addr string
	sess *session
	pool *pool
}

var _ Transport = (*Relay)(nil)

// NewRelay parses smtp://[user:pass@]host[:port] (STARTTLS when the server
// offers it, port 25 by default) or smtps://[user:pass@]host[:port]
// (implicit TLS, port 465 by default). Credentials are sent with AUTH
// PLAIN, and never over plaintext to a host other than loopback.
func NewRelay(rawURL string, opts RelayOptions) (*Relay, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("outbound: relay url: %w", err)
	}
	port := ""
	switch u.Scheme {
	case "smtp":
		port = "25"
	case "smtps":
		port = "465"
	default:
		return nil, fmt.Errorf("outbound: relay url scheme must be smtp or smtps, got %q", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("outbound: relay url has no host")
	}
	if p := u.Port(); p != "" {
		port = p
	}
	s := &session{
		helo:           opts.HeloName,
		tls:            opts.TLSConfig,
		implicitTLS:    u.Scheme == "smtps",
		dialTimeout:    opts.DialTimeout,
		commandTimeout: opts.CommandTimeout,
	}
	if s.helo == "" {
		s.helo = "localhost"
	}
	if s.tls == nil {
		s.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if s.dialTimeout == 0 {
		s.dialTimeout = 30 * time.Second
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	r := &Relay{addr: net.JoinHostPort(host, port), sess: s}
	r.pool = newPool(func(ctx context.Context, key string) (*conn, error) {
		source, addr := cutSource(key)
		cn, err := s.open(ctx, addr, host, port, host, source)
		if err != nil {
			return nil, err
		}
		cn.host = addr
		return cn, nil
	}, poolConfig{
		maxConns: opts.MaxConns, idleTimeout: opts.IdleTimeout,
		maxMsgs: opts.MaxMessagesPerConn, clock: opts.Clock,
	})
	return r, nil
}

// Send delivers data to every recipient of env through the relay.
func (r *Relay) Send(ctx context.Context, env Envelope, data []byte) (*Result, error) {
	if err := validEnvelope(env); err != nil {
		return nil, err
	}
	res := &Result{Host: r.addr}
	err := r.pool.do(ctx, sourceKey(env.Source, r.addr), func(cn *conn) error {
		rcpts, err := transact(cn, r.addr, env, data)
		res.Rcpts = rcpts
		return err
	})
	if err != nil {
		return finishFailed(res, env.To, r.addr, err)
	}
	return res, nil
}

// Close ends the idle pooled sessions; Send may still be called after.
func (r *Relay) Close() error {
	r.pool.close()
	return nil
}

// finishFailed turns a session failure into per-recipient results:
// recipients the server already answered keep their answer, the rest get
// the failure. The error survives only when nobody got an answer.
func finishFailed(res *Result, rcpts []string, host string, err error) (*Result, error) {
	// Every session failure is worth a retry: networks heal, and the ones
	// that need an operator (credentials, TLS on the relay) heal too.
	const temporary = true
	if res.Rcpts == nil {
		res.Rcpts = failAll(rcpts, host, err, temporary)
		return res, &SendError{Temporary: temporary, Host: host, Err: err}
	}
	answered := false
	for i := range res.Rcpts {
		if res.Rcpts[i].Code == 0 {
			res.Rcpts[i].Message = err.Error()
			res.Rcpts[i].Temporary = temporary
			if res.Rcpts[i].Stage == "" { // else keep where it broke (a hang after DATA is "data")
				res.Rcpts[i].Stage = StageConnect
			}
			res.Rcpts[i].Timeout = IsTimeout(err)
		} else {
			answered = true
		}
	}
	if !answered {
		return res, &SendError{Temporary: temporary, Host: host, Err: err}
	}
	return res, nil
}
