package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
)

// The event stream (GET /v1/events/stream) reads the event log itself, in
// its order, so that it works on every node of a cluster and resumes from
// any cursor the log still holds; nothing is buffered beyond one page.
const (
	// StreamPage is how many events one read of a stream takes, and so
	// the most a stream holds in memory.
	StreamPage = 100
	// streamWindow is how many log rows (every workspace's) one read looks
	// at, at most: a stream far behind walks the log in steps this long.
	streamWindow = 5000
	// MaxStreams is how many streams one workspace may hold open on a node.
	MaxStreams = 5
	// tailPoll is how often the node looks for the log's newest event
	// while a stream waits (events raised on other nodes signal nothing here).
	tailPoll = 250 * time.Millisecond
	// tailSettle is how old a look at the log's end must be before a
	// stream reads up to it where commits run side by side (PostgreSQL):
	// an event whose seq was taken before a later one's may commit after
	// it, and a stream that moved past its seq would never see it.
	tailSettle = 2 * time.Second
)

// ErrStreamsClosed ends the node's streams when it shuts down.
var ErrStreamsClosed = errors.New("webhooks: the node is shutting down")

// StreamScope is what one stream may see: its workspace's webhook events,
// narrowed for a key bound to a mailbox or limited to a domain.
type StreamScope struct {
	WorkspaceID string
	Mailbox     string   // a key bound to a mailbox: that mailbox's events (as a scoped endpoint gets them)
	DomainID    string   // a key limited to a sending domain: email events from it, and its domain.verified
	DomainName  string   // the domain's name
	Types       []string // only these event types; nil: every type
}

// StreamEvent is one event of a stream.
type StreamEvent struct {
	Cursor int64 // its place in the log: resume after it
	ID     string
	Type   string
	At     time.Time
	Body   []byte // exactly what a webhook delivery of it carries
}

// tail tracks the log's newest seq for the node's waiting streams, one
// query per tailPoll however many wait.
type tail struct {
	mu      sync.Mutex
	looks   []look        // recent looks at the log's end, oldest first
	changed chan struct{} // closed when the horizon moves
	waiting int
	told    int64         // the horizon the streams were last woken for
	closed  chan struct{} // closed at shutdown (CloseStreams)
	open    map[string]int
	settle  time.Duration
}

type look struct {
	at  time.Time
	max int64
}

func newTail(settle time.Duration) *tail {
	return &tail{changed: make(chan struct{}), closed: make(chan struct{}), open: map[string]int{}, settle: settle}
}

// horizon is the seq a stream may read up to now, and the channel that
// closes when it moves.
func (t *tail) horizon() (int64, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.horizonLocked(), t.changed
}

func (t *tail) horizonLocked() int64 {
	cut := time.Now().Add(-t.settle)
	var h int64
	for _, l := range t.looks {
		if l.at.After(cut) {
			break
		}
		h = l.max
	}
	return h
}

// note records a look at the log's end and wakes the streams if the
// horizon moved (by this look, or by an earlier one growing old enough).
func (t *tail) note(max int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.looks = append(t.looks, look{time.Now(), max})
	// Keep the newest look at least settle old and those after it.
	cut := time.Now().Add(-t.settle)
	for len(t.looks) > 1 && !t.looks[1].at.After(cut) {
		t.looks = t.looks[1:]
	}
	if h := t.horizonLocked(); h != t.told {
		t.told = h
		close(t.changed)
		t.changed = make(chan struct{})
	}
}

func (t *tail) waiters() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waiting
}

// tailLoop looks at the log's end while any stream waits.
func (s *Service) tailLoop(ctx context.Context) {
	tick := time.NewTicker(tailPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if s.tail.waiters() == 0 {
			continue
		}
		max, err := events.MaxSeq(ctx, s.db)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("webhooks: reading the event log's end", "err", err)
			}
			continue
		}
		s.tail.note(max)
	}
}

// CloseStreams ends every open stream (the HTTP server calls it as it shuts
// down: a stream is never idle, so it would hold the shutdown). A second
// call does nothing.
func (s *Service) CloseStreams() {
	s.tail.mu.Lock()
	defer s.tail.mu.Unlock()
	select {
	case <-s.tail.closed:
	default:
		close(s.tail.closed)
	}
}

// Stream reads one client's events in log order.
type Stream struct {
	s      *Service
	scope  StreamScope
	cursor int64
	once   sync.Once
}

// OpenStream starts a stream of scope's events after cursor (0: from the
// log's oldest; see StreamCursor). A workspace holds at most MaxStreams on
// a node; Close gives the place back.
func (s *Service) OpenStream(scope StreamScope, cursor int64) (*Stream, error) {
	t := s.tail
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[scope.WorkspaceID] >= MaxStreams {
		return nil, apierr.New(429, "rate_limited", "This workspace already has %d event streams open on this node.", MaxStreams).
			WithNext("Close one, or wait and retry after Retry-After seconds.").WithRetryAfter(5)
	}
	t.open[scope.WorkspaceID]++
	return &Stream{s: s, scope: scope, cursor: max(cursor, 0)}, nil
}

// StreamCursor is the cursor of a stream that starts with the events
// created at or after since.
func (s *Service) StreamCursor(ctx context.Context, since time.Time) (int64, error) {
	return events.SeqBefore(ctx, s.db, since)
}

// LogEnd is the cursor of a stream that starts with the events raised from
// now on.
func (s *Service) LogEnd(ctx context.Context) (int64, error) { return events.MaxSeq(ctx, s.db) }

// Close gives the stream's place back. A second call does nothing.
func (st *Stream) Close() {
	st.once.Do(func() {
		t := st.s.tail
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.open[st.scope.WorkspaceID]--; t.open[st.scope.WorkspaceID] <= 0 {
			delete(t.open, st.scope.WorkspaceID)
		}
	})
}

// Next returns the next page of events (at most StreamPage), waiting up
// to wait for one; none when the wait ends first.
func (st *Stream) Next(ctx context.Context, wait time.Duration) ([]StreamEvent, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	t := st.s.tail
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, changed := t.horizon()
		if t.settle == 0 && h <= st.cursor {
			// One writer at a time: the log's end now is safe to read up to.
			m, err := events.MaxSeq(ctx, st.s.db)
			if err != nil {
				return nil, err
			}
			h = max(h, m)
		}
		if h > st.cursor {
			evs, err := st.read(ctx, h)
			if err != nil || len(evs) > 0 {
				return evs, err
			}
			continue // past rows it may not see: look further
		}
		t.mu.Lock()
		t.waiting++
		t.mu.Unlock()
		timedOut := false
		select {
		case <-ctx.Done():
		case <-changed:
		case <-timer.C:
			timedOut = true
		case <-t.closed:
		}
		t.mu.Lock()
		t.waiting--
		t.mu.Unlock()
		select {
		case <-t.closed:
			return nil, ErrStreamsClosed
		default:
		}
		if timedOut {
			return nil, nil
		}
	}
}

// read takes the next page of the scope's events among seq (cursor, h] and
// moves the cursor past what it looked at.
func (st *Stream) read(ctx context.Context, h int64) ([]StreamEvent, error) {
	upto := min(st.cursor+streamWindow, h)
	rows, err := events.WebhookEventsIn(ctx, st.s.db, st.scope.WorkspaceID, st.cursor, upto, StreamPage)
	if err != nil {
		return nil, err
	}
	next := upto
	if len(rows) == StreamPage {
		next = rows[len(rows)-1].Seq
	}
	out, err := st.s.visible(ctx, st.scope, rows)
	if err != nil {
		return nil, err
	}
	st.cursor = next
	return out, nil
}

// visible keeps the rows scope may see, as stream events.
func (s *Service) visible(ctx context.Context, scope StreamScope, rows []events.Stored) ([]StreamEvent, error) {
	var mailboxes []events.Claimed
	if scope.Mailbox != "" {
		mailboxes = make([]events.Claimed, len(rows))
		for i, r := range rows {
			mailboxes[i] = events.Claimed{WorkspaceID: scope.WorkspaceID, MailboxID: r.MailboxID, EmailID: r.EmailID}
		}
		if err := s.attributeEmails(ctx, s.db, mailboxes, map[string]bool{scope.WorkspaceID: true}); err != nil {
			return nil, err
		}
	}
	var out []StreamEvent
	for i, r := range rows {
		if len(scope.Types) > 0 && !slices.Contains(scope.Types, r.Type) {
			continue
		}
		if scope.Mailbox != "" && !reaches(scope.Mailbox, mailboxes[i].MailboxID, r.Type) {
			continue
		}
		if scope.DomainID != "" && !ofDomain(r, scope.DomainID, scope.DomainName) {
			continue
		}
		body, err := r.Envelope()
		if err != nil {
			return nil, err
		}
		out = append(out, StreamEvent{Cursor: r.Seq, ID: r.ID, Type: r.Type, At: r.At, Body: body})
	}
	return out, nil
}

// ofDomain reports whether a key limited to a sending domain may see the
// event: the events of mail sent from an address at the domain, and the
// domain's own domain.verified. Received mail, workspace and automation
// events are the workspace's, not the domain's.
func ofDomain(r events.Stored, domainID, domainName string) bool {
	var d struct {
		From     string `json:"from"`
		DomainID string `json:"domain_id"`
	}
	_ = json.Unmarshal(r.Data, &d)
	switch {
	case r.Type == events.DomainVerified:
		return d.DomainID == domainID
	case r.Type == events.EmailReceived || r.Type == events.EmailFiltered || !strings.HasPrefix(r.Type, "email."):
		return false
	}
	addr := d.From
	if a, err := mail.ParseAddress(d.From); err == nil {
		addr = a.Address
	}
	_, host, ok := strings.Cut(addr, "@")
	return ok && strings.EqualFold(host, domainName)
}

// OpenStreams is how many streams the workspace holds open on this node.
func (s *Service) OpenStreams(workspaceID string) int {
	s.tail.mu.Lock()
	defer s.tail.mu.Unlock()
	return s.tail.open[workspaceID]
}
