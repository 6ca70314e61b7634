package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/textproto"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"mailroom/internal/clock"
)

// conn is one open SMTP session that can carry several messages.
type conn struct {
	c        *smtp.Client
	raw      net.Conn          // what c talks over
	r        *textproto.Reader // BDAT replies, read from raw
	chunking bool              // the server offers CHUNKING (RFC 3030)
	// pipelining: the server offers PIPELINING (RFC 2920), and the
	// commands transact writes itself name BODY=8BITMIME and SIZE where
	// offered, as the go-smtp client's would (mailParams).
	pipelining        bool
	eightBit, sizeExt bool
	wbuf              []byte // the command group being written, reused
	host              string // host:port it is connected to
	msgs              int
	lastUsed          time.Time
	// clean: the last transaction ended with the server's answer to the
	// message or to RSET, so no transaction is open there.
	clean bool

	secure        *tls.Conn      // its TLS layer, nil in the clear
	connectMillis int64          // how long opening it took (TCP to EHLO, TLS, AUTH)
	roots         *x509.CertPool // what its certificate is checked against (nil: the system's)
	facts         *Session       // session(), worked out once
}

// tlsState is the session's TLS state: the client cannot see it through
// the wrapper that replays a STARTTLS session's greeting.
func (cn *conn) tlsState() (tls.ConnectionState, bool) {
	if cn.secure != nil {
		return cn.secure.ConnectionState(), true
	}
	if cn.c != nil {
		return cn.c.TLSConnectionState()
	}
	return tls.ConnectionState{}, false
}

// session describes the connection for an attempt's story; the
// certificate is checked once per connection, not per message.
func (cn *conn) session() Session {
	if cn.facts == nil {
		f := &Session{}
		if a, ok := cn.raw.LocalAddr().(*net.TCPAddr); ok && cn.raw != nil {
			f.SourceIP = a.IP.String()
		}
		if st, ok := cn.tlsState(); ok {
			f.Cipher = tls.CipherSuiteName(st.CipherSuite)
			f.Verified = verifiedPeer(st, cn.roots)
		}
		cn.facts = f
	}
	s := *cn.facts
	s.Reused = cn.msgs > 0
	return s
}

// verifiedPeer says whether the server's chain verifies for the name the
// session asked for: opportunistic TLS does not require it, the story
// tells it.
func verifiedPeer(st tls.ConnectionState, roots *x509.CertPool) bool {
	if len(st.PeerCertificates) == 0 {
		return false
	}
	inter := x509.NewCertPool()
	for _, c := range st.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := st.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: st.ServerName, Roots: roots, Intermediates: inter})
	return err == nil
}

// peer is the session's remote address and TLS version, for logs.
func (cn *conn) peer() (ip, version string) {
	if cn.raw != nil {
		if a, ok := cn.raw.RemoteAddr().(*net.TCPAddr); ok {
			ip = a.IP.String()
		} else if a := cn.raw.RemoteAddr(); a != nil {
			ip = a.String()
		}
	}
	if st, ok := cn.tlsState(); ok {
		version = tls.VersionName(st.Version)
	}
	return ip, version
}

// dialFunc opens and greets (EHLO, STARTTLS, AUTH) a new session to addr.
type dialFunc func(ctx context.Context, addr string) (*conn, error)

// pool keeps a few idle sessions per destination and caps the sessions
// open to it at once: reconnecting (TCP, TLS, EHLO, AUTH) costs more than
// the message, and receivers throttle senders that open too many.
type pool struct {
	dial        dialFunc
	clock       clock.Clock
	maxConns    int
	maxIdle     int
	idleTimeout time.Duration
	maxMsgs     int

	mu    sync.Mutex
	hosts map[string]*hostPool
}

type hostPool struct {
	sem  chan struct{} // one token per open session
	mu   sync.Mutex
	idle []*conn // most recently used last
}

type poolConfig struct {
	maxConns    int
	maxIdle     int
	idleTimeout time.Duration
	maxMsgs     int
	clock       clock.Clock
}

func newPool(dial dialFunc, cfg poolConfig) *pool {
	if cfg.maxConns <= 0 {
		cfg.maxConns = 10
	}
	if cfg.maxIdle <= 0 || cfg.maxIdle > cfg.maxConns {
		cfg.maxIdle = cfg.maxConns
	}
	if cfg.idleTimeout <= 0 {
		cfg.idleTimeout = 30 * time.Second
	}
	if cfg.maxMsgs <= 0 {
		cfg.maxMsgs = 100
	}
	if cfg.clock == nil {
		cfg.clock = clock.Real{}
	}
	return &pool{
		dial: dial, clock: cfg.clock, maxConns: cfg.maxConns, maxIdle: cfg.maxIdle,
		idleTimeout: cfg.idleTimeout, maxMsgs: cfg.maxMsgs, hosts: map[string]*hostPool{},
	}
}

func (p *pool) host(addr string) *hostPool {
	p.mu.Lock()
	defer p.mu.Unlock()
	hp := p.hosts[addr]
	if hp == nil {
		hp = &hostPool{sem: make(chan struct{}, p.maxConns)}
		p.hosts[addr] = hp
	}
	return hp
}

// freshFor is how long after its last message a clean idle session is
// reused without a check: RSET made every message pay two round trips (the
// go-smtp client then says EHLO again), and a server does not drop a
// session it answered a moment ago; if it did, the message is tried once
// more on a new session (errBroken.unsent).
const freshFor = 2 * time.Second

// do runs fn on a session to addr: a reused idle one (checked with RSET
// unless it is fresh) or a new one. fn's errBroken closes the session;
// anything else returns it to the idle list. The context bounds the wait
// for a free slot and, by closing the connection, any blocking I/O.
func (p *pool) do(ctx context.Context, addr string, fn func(*conn) error) error {
	hp := p.host(addr)
	select {
	case hp.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-hp.sem }()

	cn, unchecked := p.takeIdle(hp)
	for {
		if cn == nil {
			var err error
			began := p.clock.Now()
			if cn, err = p.dial(ctx, addr); err != nil {
				return err
			}
			cn.connectMillis = p.clock.Now().Sub(began).Milliseconds()
		}
		stop := context.AfterFunc(ctx, func() { _ = cn.c.Close() })
		err := fn(cn)
		cancelled := !stop()
		cn.msgs++
		b, broken := err.(errBroken)
		if broken || cancelled || cn.msgs >= p.maxMsgs {
			if !broken && !cancelled {
				_ = cn.c.Quit()
			}
			_ = cn.c.Close()
			if broken && b.unsent && unchecked && !cancelled {
				cn, unchecked = nil, false // the session had gone: once more on a new one
				continue
			}
			return err
		}
		cn.lastUsed = p.clock.Now()
		hp.mu.Lock()
		if len(hp.idle) < p.maxIdle {
			hp.idle = append(hp.idle, cn)
			cn = nil
		}
		hp.mu.Unlock()
		if cn != nil {
			_ = cn.c.Quit()
			_ = cn.c.Close()
		}
		return err
	}
}

// takeIdle pops the freshest idle session that still answers RSET, or
// without asking when it is clean and fresh (unchecked).
func (p *pool) takeIdle(hp *hostPool) (cn *conn, unchecked bool) {
	for {
		hp.mu.Lock()
		n := len(hp.idle)
		if n == 0 {
			hp.mu.Unlock()
			return nil, false
		}
		cn := hp.idle[n-1]
		hp.idle = hp.idle[:n-1]
		hp.mu.Unlock()
		idle := p.clock.Now().Sub(cn.lastUsed)
		if idle > p.idleTimeout {
			_ = cn.c.Close()
			continue
		}
		if cn.clean && idle < freshFor {
			return cn, true
		}
		// RSET both clears any leftover transaction state and proves the
		// server has not closed the session while it sat idle.
		if err := cn.c.Reset(); err != nil {
			_ = cn.c.Close()
			continue
		}
		cn.clean = true
		return cn, false
	}
}

// close shuts every idle session; sessions in use close when returned.
func (p *pool) close() {
	p.mu.Lock()
	hosts := p.hosts
	p.hosts = map[string]*hostPool{}
	p.mu.Unlock()
	for _, hp := range hosts {
		hp.mu.Lock()
		for _, cn := range hp.idle {
			_ = cn.c.Quit()
			_ = cn.c.Close()
		}
		hp.idle = nil
		hp.mu.Unlock()
	}
}
