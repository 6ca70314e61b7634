// Package smtplimit keeps one client from holding Mailroom's SMTP listeners
// (smtpin, submission): caps on concurrent sessions in all and per client
// address, a command budget per session, and which commands count as
// progress for the idle timeout (go-smtp's Server.Command, a Mailroom
// addition in third_party/go-smtp).
package smtplimit

import (
	"bufio"
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// Caps are what an SMTP server limits, inbound and submission alike:
// sessions at once in all and from one address, a session's lifetime and
// its command budget (NOOP and RSET included). A zero field takes its
// default (WithDefaults), the same as config's.
type Caps struct {
	MaxSessions int           // default 200; more are told 421 4.3.2
	PerIP       int           // default 50 (Postfix's); more are told 421 4.7.0
	MaxDuration time.Duration // default 10 minutes; then 421 4.7.0
	MaxCommands int           // default 1000; the one past it is told 421 4.7.0
}

// WithDefaults fills c's zero fields.
func (c Caps) WithDefaults() Caps {
	if c.MaxSessions == 0 {
		c.MaxSessions = 200
	}
	if c.PerIP == 0 {
		c.PerIP = 50
	}
	if c.MaxDuration == 0 {
		c.MaxDuration = 10 * time.Minute
	}
	if c.MaxCommands == 0 {
		c.MaxCommands = 1000
	}
	return c
}

// Limits are a listener's caps on concurrent sessions.
type Limits struct {
	MaxSessions int // sessions at once; more are told 421 4.3.2 and closed
	PerIP       int // sessions at once from one address (IPv6: one /64); more are told 421 4.7.0
	// Quiet closes a refused connection without a reply: on an implicit
	// TLS listener the client waits for a handshake, not a greeting.
	Quiet bool
}

// Listener hands out the connections its Limits allow; the others are
// answered 421 and closed at once, before go-smtp sees them.
type Listener struct {
	net.Listener
	limits Limits

	mu       sync.Mutex
	sessions int
	perIP    map[netip.Addr]int
}

// Listen wraps ln.
func Listen(ln net.Listener, l Limits) *Listener {
	return &Listener{Listener: ln, limits: l, perIP: map[netip.Addr]int{}}
}

var (
	replyBusy  = []byte("421 4.3.2 Too many connections, try again later\r\n")
	replyPerIP = []byte("421 4.7.0 Too many connections from your address\r\n")
)

// Accept returns the next connection within the limits.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientKey(c.RemoteAddr())
		refusal := l.take(key)
		if refusal == nil {
			return &Conn{Conn: c, r: bufio.NewReaderSize(c, connBuffer), release: func() { l.give(key) }}, nil
		}
		if !l.limits.Quiet {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(refusal)
		}
		_ = c.Close()
	}
}

// take counts a session for key, or answers the refusal that applies.
func (l *Listener) take(key netip.Addr) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.PerIP > 0 && l.perIP[key] >= l.limits.PerIP {
		return replyPerIP
	}
	if l.limits.MaxSessions > 0 && l.sessions >= l.limits.MaxSessions {
		return replyBusy
	}
	l.sessions++
	l.perIP[key]++
	return nil
}

func (l *Listener) give(key netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sessions--
	if l.perIP[key]--; l.perIP[key] <= 0 {
		delete(l.perIP, key)
	}
}

// clientKey is whom a connection counts against: its IPv4 address, or the
// /64 of its IPv6 address (one host commonly holds a whole /64).
func clientKey(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// connBuffer is how much of a session's input is read at once: go-smtp
// reads through a 4 KiB buffer, a read system call per 4 KiB of DATA.
const connBuffer = 64 << 10

// Conn is a session's connection: its reads go through one buffer, it
// counts the session's commands, and its close gives its place back.
type Conn struct {
	net.Conn
	r        *bufio.Reader // every read goes through it (STARTTLS's too)
	commands int           // counted by Commands' hook, on the session's goroutine
	once     sync.Once
	release  func()
}

func (c *Conn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Close gives the session's place back once.
func (c *Conn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// errTooManyCommands ends a session over its command budget.
var errTooManyCommands = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0},
	Message: "Too many commands in one session, closing connection"}

// Commands returns the hook for go-smtp's Server.Command: every command,
// NOOP and RSET included, counts against budget(c) (asked at each command,
// so a session may earn a larger one, as by AUTH); the one past it is
// answered 421 4.7.0 and the connection closed. Only Progress commands
// restart the idle timeout. A connection not from a Listener is not counted.
func Commands(budget func(c *smtp.Conn) int) func(c *smtp.Conn, verb string) (bool, error) {
	return func(c *smtp.Conn, verb string) (bool, error) {
		if lc := connOf(c); lc != nil {
			lc.commands++
			if lc.commands > budget(c) {
				return false, errTooManyCommands
			}
		}
		return Progress(verb), nil
	}
}

// Progress reports whether a command moves a session forward and so
// restarts its idle timeout: greetings, authentication, TLS and the
// transaction's commands. NOOP, RSET, VRFY, HELP, QUIT and unknown commands
// do not, so a client repeating them is still closed when idle.
func Progress(verb string) bool {
	switch verb {
	case "HELO", "EHLO", "LHLO", "MAIL", "RCPT", "DATA", "BDAT", "AUTH", "STARTTLS":
		return true
	}
	return false
}

// connOf finds the Listener's Conn under go-smtp's (under TLS, if any).
func connOf(c *smtp.Conn) *Conn {
	nc := c.Conn()
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	lc, _ := nc.(*Conn)
	return lc
}
