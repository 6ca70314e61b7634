package outbound

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"mailroom/internal/netpolicy"
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
	policy         *netpolicy.Policy // MX delivery's; nil for the operator's relay

	// requireTLS, when set, says whether a destination (host:port) must
	// not be reached without an authenticated TLS session (an MTA-STS
	// policy in enforce mode).
	requireTLS func(key string) bool

	// noTLS remembers hosts (host:port) that do not offer STARTTLS or failed
	// the handshake, so each new session there does not pay a failed try.
	noTLS sync.Map
}

var errNoStartTLS = errors.New("outbound: server does not offer STARTTLS")

// open connects to ip:port and greets as serverName (used for TLS
// verification and SNI); key identifies the destination for noTLS.
//
// With STARTTLS configured the session is opened by hand (greet): one EHLO
// with the configured name, STARTTLS when the server offers it, and the
// go-smtp client takes over on the encrypted connection (its EHLO there is
// the one RFC 3207 section 4.2 requires). A server that does not offer
// STARTTLS goes on in plaintext on the same connection, where allowed: no
// second connection, no second EHLO.
func (s *session) open(ctx context.Context, key, ip, port, serverName, source string) (*conn, error) {
	d := net.Dialer{Timeout: s.dialTimeout}
	if s.policy != nil {
		d.ControlContext = s.policy.Control
	}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
	if err != nil {
		return nil, err
	}
	// Greeting and EHLO block on the server; a cancelled ctx must end them.
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()

	cfg := s.tlsConfig(serverName)
	var c *smtp.Client
	var raw net.Conn     // what the client talks over (BDAT writes there)
	var secure *tls.Conn // the TLS layer, which the replay wrapper hides from c
	newClient := func(nc net.Conn) *smtp.Client {
		raw = nc
		return s.newClient(nc)
	}
	switch {
	case s.implicitTLS:
		secure = tls.Client(nc, cfg)
		c = newClient(secure)
	case s.tls == nil:
		c = newClient(nc)
	default:
		_, skip := s.noTLS.Load(key)
		g, err := s.greet(nc, !skip)
		if err != nil {
			_ = nc.Close()
			return nil, err
		}
		if !g.startTLS {
			if !skip {
				s.noTLS.Store(key, true)
			}
			if !s.plaintextOK(ip) {
				_ = nc.Close()
				return nil, errNoStartTLS
			}
			if s.requireTLS != nil && s.requireTLS(key) {
				_ = nc.Close()
				return nil, errNoStartTLS
			}
			// Replay the greeting and the EHLO answer to the client, and
			// swallow its EHLO: the server has had ours.
			c = newClient(&replayConn{Conn: nc, pending: g.greeting, ehloReply: g.ehloReply})
			break
		}
		tc := tls.Client(nc, cfg)
		secure = tc
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			if s.opportunistic && isTLSError(err) && (s.requireTLS == nil || !s.requireTLS(key)) {
				// The connection is spent; RFC 7435 opportunistic security
				// falls back to plaintext on a new one.
				s.noTLS.Store(key, true)
				return s.open(ctx, key, ip, port, serverName, source)
			}
			return nil, err
		}
		// A new session starts inside TLS without a greeting; the client
		// expects one.
		c = newClient(&replayConn{Conn: tc, pending: []byte("220 " + serverName + " TLS session\r\n")})
	}
	if err := c.Hello(s.helo); err != nil {
		_ = c.Close()
		if s.tls != nil && !s.implicitTLS && s.opportunistic && isTLSError(err) {
			s.noTLS.Store(key, true)
			return s.open(ctx, key, ip, port, serverName, source)
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
	cn := &conn{c: c, raw: raw, secure: secure}
	if cfg != nil {
		cn.roots = cfg.RootCAs
	}
	cn.chunking, _ = c.Extension("CHUNKING")
	cn.pipelining, _ = c.Extension("PIPELINING")
	cn.eightBit, _ = c.Extension("8BITMIME")
	cn.sizeExt, _ = c.Extension("SIZE")
	return cn, nil
}

// greeting is what greet learnt before TLS.
type greeting struct {
	greeting  []byte // the server's 220 reply, as sent
	ehloReply []byte // its reply to our EHLO, as sent
	startTLS  bool   // STARTTLS offered, sent and accepted (220)
}

// greet reads the server's greeting, says EHLO with the configured name and,
// when tryTLS and the server offers it, STARTTLS. A refusal is returned as
// an *smtp.SMTPError.
func (s *session) greet(nc net.Conn, tryTLS bool) (*greeting, error) {
	timeout := s.commandTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	// Unbuffered reads: nothing past the last reply may be consumed, since
	// the TLS handshake or the client reads on from here.
	r := textproto.NewReader(bufio.NewReaderSize(oneByteReader{nc}, 16))
	g := &greeting{}
	lines, code, err := readReply(r)
	if err != nil {
		return nil, err
	}
	if code != 220 {
		return nil, replyError(code, lines)
	}
	g.greeting = formatReply(code, lines)
	if _, err := fmt.Fprintf(nc, "EHLO %s\r\n", s.helo); err != nil {
		return nil, err
	}
	lines, code, err = readReply(r)
	if err != nil {
		return nil, err
	}
	if code != 250 {
		return nil, replyError(code, lines)
	}
	g.ehloReply = formatReply(code, lines)
	offered := false
	for _, l := range lines[1:] {
		if strings.EqualFold(strings.TrimSpace(l), "STARTTLS") {
			offered = true
		}
	}
	if !offered || !tryTLS {
		return g, nil
	}
	if _, err := io.WriteString(nc, "STARTTLS\r\n"); err != nil {
		return nil, err
	}
	lines, code, err = readReply(r)
	if err != nil {
		return nil, err
	}
	if code != 220 {
		return nil, replyError(code, lines)
	}
	g.startTLS = true
	return g, nil
}

// readReply reads one (possibly multi-line) SMTP reply: its text lines
// without the code, and the code.
func readReply(r *textproto.Reader) ([]string, int, error) {
	var lines []string
	for {
		l, err := r.ReadLine()
		if err != nil {
			return nil, 0, err
		}
		if len(l) < 3 {
			return nil, 0, fmt.Errorf("outbound: malformed reply %q", l)
		}
		code, err := strconv.Atoi(l[:3])
		if err != nil || code < 100 || code > 599 {
			return nil, 0, fmt.Errorf("outbound: malformed reply %q", l)
		}
		text := ""
		if len(l) > 4 {
			text = l[4:]
		}
		lines = append(lines, text)
		if len(l) == 3 || l[3] == ' ' {
			return lines, code, nil
		}
		if l[3] != '-' || len(lines) > 100 {
			return nil, 0, fmt.Errorf("outbound: malformed reply %q", l)
		}
	}
}

func formatReply(code int, lines []string) []byte {
	var b strings.Builder
	for i, l := range lines {
		sep := "-"
		if i == len(lines)-1 {
			sep = " "
		}
		fmt.Fprintf(&b, "%d%s%s\r\n", code, sep, l)
	}
	return []byte(b.String())
}

// replyError turns a refusal during the greeting into the error type the
// rest of the transport reads (an RFC 3463 code at the start of the text
// is taken out, as go-smtp does).
func replyError(code int, lines []string) error {
	msg := strings.Join(lines, " ")
	se := &smtp.SMTPError{Code: code, EnhancedCode: smtp.NoEnhancedCode, Message: msg}
	if f := strings.Fields(msg); len(f) > 0 {
		if p := strings.Split(f[0], "."); len(p) == 3 && (p[0] == "4" || p[0] == "5") {
			var ec smtp.EnhancedCode
			ok := true
			for i, x := range p {
				n, err := strconv.Atoi(x)
				if err != nil {
					ok = false
					break
				}
				ec[i] = n
			}
			if ok {
				se.EnhancedCode = ec
				se.Message = strings.TrimSpace(strings.TrimPrefix(msg, f[0]))
			}
		}
	}
	return se
}

// oneByteReader keeps bufio from reading ahead of a reply: the greeting
// phase is a few hundred bytes, so byte reads cost nothing that matters.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

// replayConn hands the go-smtp client replies already read (the greeting,
// and for a session that stays in plaintext the EHLO answer, in place of
// the client's own EHLO, which it swallows).
type replayConn struct {
	net.Conn
	pending   []byte
	ehloReply []byte // non-nil: swallow the next EHLO and answer with this
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *replayConn) Write(p []byte) (int, error) {
	if c.ehloReply != nil && (bytes.HasPrefix(p, []byte("EHLO ")) || bytes.HasPrefix(p, []byte("HELO "))) {
		c.pending = append(c.pending, c.ehloReply...)
		c.ehloReply = nil
		return len(p), nil
	}
	return c.Conn.Write(p)
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
