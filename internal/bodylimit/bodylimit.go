// Package bodylimit bounds the request bodies an HTTP server receives: a
// body must arrive within a read deadline (a longer one on upload routes),
// and only so many bodies are received at once, in all and from one client
// address. A body past either limit fails its Read with ErrTimeout or
// ErrBusy, spec-coded errors, so each handler answers them in its own
// route's error shape; the connection is closed after the answer.
package bodylimit

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"mailroom/internal/apierr"
)

var (
	// ErrTimeout is a body that did not arrive within its read deadline.
	ErrTimeout = apierr.New(http.StatusRequestTimeout, "request_timeout", "The request body did not arrive in time.").
			WithNext("Send the body at once, or retry over a faster connection.")
	// ErrBusy is a body refused because too many are being received.
	ErrBusy = apierr.New(http.StatusServiceUnavailable, "server_busy", "Too many request bodies are being received; the body was not read.").
		WithNext("Retry after Retry-After seconds.").WithRetryAfter(5)
)

// Options are a Guard's limits.
type Options struct {
	Timeout       time.Duration // time for a body to arrive, from the request's start
	UploadTimeout time.Duration // the same on the Uploads routes
	// Uploads are http.ServeMux patterns ("POST /v1/emails") of the routes
	// that take large bodies.
	Uploads []string
	Max     int // bodies received at once
	PerIP   int // bodies received at once from one client address
}

// Guard applies Options to the requests of one or more servers.
type Guard struct {
	opts    Options
	uploads *http.ServeMux

	mu    sync.Mutex
	n     int
	perIP map[string]int
}

// New returns a Guard.
func New(o Options) *Guard {
	g := &Guard{opts: o, uploads: http.NewServeMux(), perIP: map[string]int{}}
	mark := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, p := range o.Uploads {
		g.uploads.Handle(p, mark)
	}
	return g
}

// Wrap bounds the bodies of next's requests. A request without a body
// (most GETs) is passed on untouched: nothing to wait for.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		limit := g.opts.Timeout
		if _, p := g.uploads.Handler(r); p != "" {
			limit = g.opts.UploadTimeout
		}
		rc := http.NewResponseController(w)
		// The whole body must be in by then; an error means a writer that
		// cannot (a test recorder) and leaves only the cap.
		_ = rc.SetReadDeadline(time.Now().Add(limit))
		b := &body{src: r.Body, g: g, ip: clientIP(r), w: w, rc: rc, left: r.ContentLength}
		defer b.release()
		r.Body = b
		next.ServeHTTP(w, r)
	})
}

func (g *Guard) take(ip string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n >= g.opts.Max || g.perIP[ip] >= g.opts.PerIP {
		return false
	}
	g.n++
	g.perIP[ip]++
	return true
}

func (g *Guard) give(ip string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.perIP[ip]--; g.perIP[ip] <= 0 {
		delete(g.perIP, ip)
	}
}

// body holds a place from its first Read to its end (EOF, an error, or
// the handler's return).
type body struct {
	src  io.ReadCloser
	g    *Guard
	ip   string
	w    http.ResponseWriter
	rc   *http.ResponseController
	held bool
	left int64 // bytes still to come; -1 when unknown (chunked)
	once sync.Once
	err  error // the refusal, once given
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if !b.held {
		if !b.g.take(b.ip) {
			// The deadline now: what net/http would still read of the body
			// after the answer fails at once, and the connection closes.
			b.fail(ErrBusy)
			_ = b.rc.SetReadDeadline(time.Now())
			return 0, b.err
		}
		b.held = true
	}
	n, err := b.src.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	switch {
	case err == io.EOF || b.left == 0:
		// In whole (io.ReadFull of the announced length never sees EOF):
		// the place is free, and no deadline is left to cancel a long
		// handler's context (net/http's background read would take it
		// for the client gone).
		b.release()
		_ = b.rc.SetReadDeadline(time.Time{})
	case isTimeout(err):
		b.release()
		b.fail(ErrTimeout)
		return n, b.err
	}
	return n, err
}

func (b *body) Close() error { return b.src.Close() }

// fail remembers the refusal and asks for the connection to be closed
// after the answer (the rest of the body is not worth waiting for).
func (b *body) fail(err error) {
	b.err = err
	b.w.Header().Set("Connection", "close")
}

func (b *body) release() {
	b.once.Do(func() {
		if b.held {
			b.g.give(b.ip)
		}
	})
}

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
