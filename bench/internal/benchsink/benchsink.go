// Package benchsink is the SMTP sink the delivery benchmarks send to, and
// the probe that measures transactional mail while they run: a
// transactional send every 100 ms, timed from its accept to its arrival.
package benchsink

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
)

// Sink is a go-smtp server on loopback. It counts messages and notes when
// each of the probe's transactional messages arrives.
type Sink struct {
	Addr string
	srv  *smtp.Server
	// Others counts the messages that are not the probe's.
	Others atomic.Int64
	mu     sync.Mutex
	txn    map[int]time.Time
	ids    map[string]int // Message-ID -> arrivals, once Track is called
	// tracking keeps the untracked runs off the mutex.
	tracking atomic.Bool
}

// Track makes the sink count each Message-ID it receives, for IDs.
func (s *Sink) Track() {
	s.mu.Lock()
	s.ids = map[string]int{}
	s.mu.Unlock()
	s.tracking.Store(true)
}

// IDs returns how many times each Message-ID arrived since Track.
func (s *Sink) IDs() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.ids)
}

// Start starts a sink on 127.0.0.1.
func Start() (*Sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sink{Addr: ln.Addr().String(), txn: map[int]time.Time{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return session{s}, nil }))
	srv.Domain = "sink.localhost"
	srv.MaxMessageBytes = 64 << 20
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv = srv
	go srv.Serve(ln)
	return s, nil
}

// Close stops the sink.
func (s *Sink) Close() { s.srv.Close() }

var (
	txnSubject = regexp.MustCompile(`^Subject: Txn (\d+)\r?\n?$`)
	messageID  = regexp.MustCompile(`(?i)^Message-ID:\s*(\S+)`)
)

type session struct{ s *Sink }

func (session) Mail(string, *smtp.MailOptions) error { return nil }
func (session) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (ss session) Data(r io.Reader) error {
	// Only the header is read, line by line; the body is discarded unread.
	// Reading whole messages (io.ReadAll) made a fifth of a broadcast
	// bench's allocations, whose collection the node then paid for.
	br := bufio.NewReaderSize(r, 4096)
	txn, id := -1, ""
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			break
		}
		if m := txnSubject.FindSubmatch(line); m != nil {
			txn, _ = strconv.Atoi(string(m[1]))
		} else if m := messageID.FindSubmatch(line); m != nil {
			id = string(m[1])
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return err
	}
	if ss.s.tracking.Load() && id != "" {
		ss.s.mu.Lock()
		ss.s.ids[id]++
		ss.s.mu.Unlock()
	}
	if txn < 0 {
		ss.s.Others.Add(1)
		return nil
	}
	ss.s.mu.Lock()
	ss.s.txn[txn] = time.Now()
	ss.s.mu.Unlock()
	return nil
}
func (session) Reset()        {}
func (session) Logout() error { return nil }

// Probe makes the transactional sends.
type Probe struct {
	s       *Sink
	stop    chan struct{}
	done    chan struct{}
	accepts map[int]time.Time
	failed  []error
}

// Probe starts sending: send must submit one transactional message with
// the given subject to a recipient whose mail reaches this sink, and
// return once it is accepted.
func (s *Sink) Probe(send func(subject string) error) *Probe {
	p := &Probe{s: s, stop: make(chan struct{}), done: make(chan struct{}), accepts: map[int]time.Time{}}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			at := time.Now()
			if err := send(fmt.Sprint("Txn ", i)); err != nil {
				p.failed = append(p.failed, err)
				continue
			}
			p.accepts[i] = at
		}
	}()
	return p
}

// Stop stops sending, waits 2 s for the last messages, and returns how many
// were accepted and the p99 from accept to arrival; one that never arrived
// counts as an hour. A refused send, or none at all, is an error: a
// figure measured on nothing would read as a pass.
func (p *Probe) Stop() (sent int, p99 time.Duration, err error) {
	close(p.stop)
	<-p.done
	if len(p.failed) > 0 {
		return 0, 0, fmt.Errorf("%d transactional sends refused, the first: %w", len(p.failed), p.failed[0])
	}
	if len(p.accepts) == 0 {
		return 0, 0, fmt.Errorf("no transactional send was made")
	}
	time.Sleep(2 * time.Second)
	var lat []time.Duration
	p.s.mu.Lock()
	for i, at := range p.accepts {
		if got, ok := p.s.txn[i]; ok {
			lat = append(lat, got.Sub(at))
		} else {
			lat = append(lat, time.Hour)
		}
	}
	p.s.mu.Unlock()
	slices.Sort(lat)
	return len(lat), lat[min(len(lat)-1, len(lat)*99/100)], nil
}
