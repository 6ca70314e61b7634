package tracking

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"mailroom/internal/analytics"
	"mailroom/internal/clock"
	"mailroom/internal/store"
)

// DefaultScanWindow: an open or click this soon after the message was
// handed over is a security scanner's (or a proxy's prefetch), not a
// person's. Scanners at the receiving side fetch every link within a few
// seconds of delivery; people take longer to open and click.
const DefaultScanWindow = 5 * time.Second

// flushEvery is how often the recorder writes the counts it gathered.
const flushEvery = 200 * time.Millisecond

// EmailCounter moves an email's opens and clicks counters (the sending
// area owns the emails table); app passes the sending service.
type EmailCounter interface {
	AddEngagement(ctx context.Context, tx *store.Tx, workspaceID, emailID string, opens, clicks int64) error
}

// Config builds a Service.
type Config struct {
	DB      *store.DB
	Clock   clock.Clock
	Log     *slog.Logger
	Signer  Signer
	Counter EmailCounter
	// Booking, when set, reads the booking of an email that has no
	// tracking row because it books late (a broadcast's: most recipients
	// never open or click): ok is false when the email is gone or was not
	// booked so. The recorder writes the row at the email's first open or
	// click. app passes the sending area's TrackingBooking.
	Booking func(ctx context.Context, q store.Querier, workspaceID, emailID string) (b Booking, ok bool, err error)
	// ScanWindow overrides DefaultScanWindow (tests); negative turns the
	// timing rule off.
	ScanWindow time.Duration
}

// Service answers the click and pixel routes and records what they see.
type Service struct {
	cfg    Config
	window time.Duration

	mu      sync.Mutex
	pending map[emailKey]*delta
	stop    chan struct{}
	done    chan struct{}
	started bool
}

type emailKey struct{ ws, id string }

// delta is what one email gathered since the last flush; links counts its
// clicks per URL ([0] a person's, [1] a machine's).
type delta struct {
	opens, clicks, machineOpens, machineClicks int64
	links                                      map[string]*[2]int64
}

// add merges e into d (a flush that failed keeps its counts).
func (d *delta) add(e *delta) {
	d.opens += e.opens
	d.clicks += e.clicks
	d.machineOpens += e.machineOpens
	d.machineClicks += e.machineClicks
	for u, n := range e.links {
		d.link(u, 0, n[0])
		d.link(u, 1, n[1])
	}
}

// maxLinksPerEmail bounds the per-URL counts one email keeps between
// flushes (a message has a bounded number of links; tokens name them).
const maxLinksPerEmail = 200

func (d *delta) link(url string, machine int, n int64) {
	if n == 0 {
		return
	}
	if d.links == nil {
		d.links = map[string]*[2]int64{}
	}
	c := d.links[url]
	if c == nil {
		if len(d.links) >= maxLinksPerEmail {
			return
		}
		c = &[2]int64{}
		d.links[url] = c
	}
	c[machine] += n
}

// New returns the service; Start runs its recorder.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	w := cfg.ScanWindow
	if w == 0 {
		w = DefaultScanWindow
	}
	return &Service{cfg: cfg, window: w, pending: map[emailKey]*delta{}}
}

// Visit is what the routes know of a request.
type Visit struct {
	Method    string
	UserAgent string
	// UserActivated is a browser's word that a person's gesture started
	// the navigation (Sec-Fetch-User: ?1), which no scanner's fetch
	// carries: such a click is a person's whatever its timing or agent.
	UserActivated bool
}

// Click opens a click token and returns the URL it was signed for; ok is
// false for any token this service did not make for a click (the route
// then answers a harmless page and redirects nowhere).
func (s *Service) Click(token string, v Visit) (target string, ok bool) {
	l, ok := s.cfg.Signer.Open(KindClick, token)
	if !ok {
		return "", false
	}
	s.note(l, KindClick, s.Machine(v, l.Issued))
	return l.URL, true
}

// Open opens a pixel token and counts it; false for a bad token (the pixel
// is served all the same).
func (s *Service) Open(token string, v Visit) bool {
	l, ok := s.cfg.Signer.Open(KindOpen, token)
	if !ok {
		return false
	}
	s.note(l, KindOpen, s.Machine(v, l.Issued))
	return true
}

// botMarks are lowercased pieces of the user agents of crawlers, link
// preview fetchers and mail security gateways.
var botMarks = []string{"bot", "crawler", "spider", "slurp", "preview", "scanner", "facebookexternalhit",
	"barracuda", "proofpoint", "mimecast", "symantec", "trendmicro", "forcepoint", "fireeye", "safelinks",
	"headlesschrome", "phantomjs", "linkcheck", "validator"}

// Machine reports whether a visit is a machine's: a HEAD request; else,
// unless a person's gesture started it (UserActivated), no user agent; the bare "Mozilla/5.0" of Apple Mail Privacy Protection's proxy;
// a known bot or scanner user agent; or any fetch within the scan window
// of the message's hand-over (issued). docs/decisions.md has the method.
func (s *Service) Machine(v Visit, issued time.Time) bool {
	if v.Method == "HEAD" {
		return true
	}
	if v.UserActivated {
		return false
	}
	ua := strings.TrimSpace(v.UserAgent)
	if ua == "" || ua == "Mozilla/5.0" {
		return true
	}
	low := strings.ToLower(ua)
	for _, m := range botMarks {
		if strings.Contains(low, m) {
			return true
		}
	}
	if s.window > 0 && s.cfg.Clock.Now().Sub(issued) < s.window {
		return true
	}
	return false
}

func (s *Service) note(l Link, kind byte, machine bool) {
	s.mu.Lock()
	k := emailKey{l.WorkspaceID, l.EmailID}
	d := s.pending[k]
	if d == nil {
		d = &delta{}
		s.pending[k] = d
	}
	switch {
	case kind == KindOpen && machine:
		d.machineOpens++
	case kind == KindOpen:
		d.opens++
	case machine:
		d.machineClicks++
		d.link(l.URL, 1, 1)
	default:
		d.clicks++
		d.link(l.URL, 0, 1)
	}
	s.mu.Unlock()
}

// Start runs the recorder until Stop.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	s.started = true
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop()
	return nil
}

// Stop writes what is gathered and ends the recorder; a second Stop does
// nothing.
func (s *Service) Stop(context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.started = false
	stop, done := s.stop, s.done
	s.mu.Unlock()
	close(stop)
	<-done
	return nil
}

func (s *Service) loop() {
	defer close(s.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			if err := s.Flush(context.Background()); err != nil {
				s.cfg.Log.Error("tracking: last flush", "err", err)
			}
			return
		case <-t.C:
			if err := s.Flush(context.Background()); err != nil {
				s.cfg.Log.Warn("tracking: flush failed; counts kept for the next one", "err", err)
			}
		}
	}
}

// Flush writes the gathered counts in one transaction: per email its
// email_tracking row, its opens and clicks counters and the analytics
// rollups. An email booked late (Config.Booking) gets its row here; a
// count for an email without one (gone, or untracked) is dropped.
// On failure the counts are kept for the next flush.
func (s *Service) Flush(ctx context.Context) error {
	s.mu.Lock()
	batch := s.pending
	if len(batch) == 0 {
		s.mu.Unlock()
		return nil
	}
	s.pending = map[emailKey]*delta{}
	s.mu.Unlock()
	keys := make([]emailKey, 0, len(batch))
	for k := range batch {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b emailKey) int {
		if c := strings.Compare(a.ws, b.ws); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	now := s.cfg.Clock.Now()
	err := s.cfg.DB.InTx(ctx, func(tx *store.Tx) error {
		for _, k := range keys {
			if err := s.apply(ctx, tx, k, *batch[k], now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.mu.Lock()
		for k, d := range batch {
			p := s.pending[k]
			if p == nil {
				s.pending[k] = d
				continue
			}
			p.add(d)
		}
		s.mu.Unlock()
	}
	return err
}

func (s *Service) apply(ctx context.Context, tx *store.Tx, k emailKey, d delta, now time.Time) error {
	row, err := bump(ctx, tx, k.ws, k.id, d)
	if errors.Is(err, store.ErrNotFound) && s.cfg.Booking != nil {
		// Booked late: the row is written now, from the email.
		b, ok, berr := s.cfg.Booking(ctx, tx, k.ws, k.id)
		if berr != nil {
			return berr
		}
		if ok && b.Flags&(TrackOpens|TrackClicks) != 0 {
			if err := bookLate(ctx, tx, b); err != nil {
				return err
			}
			row, err = bump(ctx, tx, k.ws, k.id, d)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := addLinkClicks(ctx, tx, k.ws, k.id, d.links); err != nil {
		return err
	}
	if d.opens > 0 || d.clicks > 0 {
		if err := s.cfg.Counter.AddEngagement(ctx, tx, k.ws, k.id, d.opens, d.clicks); err != nil {
			return err
		}
	}
	if row.flags&TestSend != 0 {
		return nil // a scenario address's: no analytics
	}
	c := analytics.Counts{Opens: d.opens, Clicks: d.clicks, MachineOpens: d.machineOpens, MachineClicks: d.machineClicks}
	if d.opens > 0 && row.opens == d.opens {
		c.UniqueOpens = 1
	}
	if d.clicks > 0 && row.clicks == d.clicks {
		c.UniqueClicks = 1
	}
	dims := analytics.Dims{Domain: row.domain, MailClass: row.class, TemplateID: row.templateID}
	if row.tags != "" && row.tags != "{}" {
		_ = json.Unmarshal([]byte(row.tags), &dims.Tags)
	}
	analytics.Add(tx, k.ws, now, dims, c)
	return nil
}
