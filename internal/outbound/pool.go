package outbound

import (
	"context"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"mailroom/internal/clock"
)

// conn is one open SMTP session that can carry several messages.
type conn struct {
	c        *smtp.Client
	host     string // host:port it is connected to
	msgs     int
	lastUsed time.Time
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

// do runs fn on a session to addr: a reused idle one (checked with RSET)
// or a new one. fn's errBroken closes the session; anything else returns it
// to the idle list. The context bounds the wait for a free slot and, by
// closing the connection, any blocking I/O.
func (p *pool) do(ctx context.Context, addr string, fn func(*conn) error) error {
	hp := p.host(addr)
	select {
	case hp.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-hp.sem }()

	cn := p.takeIdle(hp)
	if cn == nil {
		var err error
		if cn, err = p.dial(ctx, addr); err != nil {
			return err
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = cn.c.Close() })
	err := fn(cn)
	cancelled := !stop()
	cn.msgs++
	if _, broken := err.(errBroken); broken || cancelled || cn.msgs >= p.maxMsgs {
		if !broken && !cancelled {
			_ = cn.c.Quit()
		}
		_ = cn.c.Close()
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

// takeIdle pops the freshest idle session that still answers RSET.
func (p *pool) takeIdle(hp *hostPool) *conn {
	for {
		hp.mu.Lock()
		n := len(hp.idle)
		if n == 0 {
			hp.mu.Unlock()
			return nil
		}
		cn := hp.idle[n-1]
		hp.idle = hp.idle[:n-1]
		hp.mu.Unlock()
		if p.clock.Now().Sub(cn.lastUsed) > p.idleTimeout {
			_ = cn.c.Close()
			continue
		}
		// RSET both clears any leftover transaction state and proves the
		// server has not closed the session while it sat idle.
		if err := cn.c.Reset(); err != nil {
			_ = cn.c.Close()
			continue
		}
		return cn
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
