package policy

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"mailroom/internal/apierr"
)

// Send is what Admit needs to know about one send.
type Send struct {
	WorkspaceID string
	From        string   // the sending address, lowercased
	Recipients  []string // every recipient, lowercased
	HTML, Text  string   // the bodies as they will go (after a template)
	// Marketing marks bulk mail (a topic, or List-Unsubscribe among its
	// headers): only transactional sends with html are exempt from the
	// duplicate-content rule.
	Marketing bool
	Test      bool // every recipient a reserved test address: holds apply, counters and throttles never
	// At is when the send goes: now, or its send_at.
	At time.Time
	// Booking marks a scheduled send being booked: the holds and the
	// throttles apply and the quotas are checked for the period of At, but
	// nothing is counted until it goes (Due).
	Booking bool
	// Due marks a scheduled send whose time has come: holds and quotas are
	// checked again and counted; the throttles, applied at booking, are not.
	Due bool
}

// Ticket is what an admitted send counted; Undo gives it back when the send
// was not booked after all (refused by a later rule, a replayed idempotency
// key, a failed commit). A nil Ticket counted nothing.
type Ticket struct {
	s      *Service
	keys   [3]ckey
	nkeys  int
	ws     string
	minute int64
	n      int64
}

// Undo returns what the ticket counted; a second call does nothing.
func (t *Ticket) Undo() {
	if t == nil || t.s == nil {
		return
	}
	s := t.s
	t.s = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range t.keys[:t.nkeys] {
		if c := s.counters[k]; c != nil {
			c.total--
			c.pending.sends--
		}
	}
	if w := s.spaces[t.ws]; w != nil && t.minute != 0 {
		w.unsend(t.minute, t.n)
	}
}

// Admit applies the policy to one send: the holds (a paused workspace, a
// paused or receive-only address, a blocked recipient domain), the quotas
// and caps with the cold-sending allowance, and the minute's throttles, in
// that order. An admitted real send
// is counted; its Ticket undoes that if it is not booked after all.
func (s *Service) Admit(ctx context.Context, m Send) (*Ticket, error) {
	return s.admit(ctx, m, false)
}

// Check answers what Admit would for m and counts nothing (no quota, cap,
// throttle minute or duplicate-content recipient): a dry run's verdict.
func (s *Service) Check(ctx context.Context, m Send) error {
	_, err := s.admit(ctx, m, true)
	return err
}

// admit is Admit; dry applies every rule and counts nothing.
func (s *Service) admit(ctx context.Context, m Send, dry bool) (*Ticket, error) {
	if err := s.checkHolds(m); err != nil {
		return nil, err
	}
	if m.Test {
		return nil, nil
	}
	at := m.At.UTC()
	now := s.clock.Now().UTC()
	day, month := dayKey(at), monthKey(at)
	// At most three limits; a fixed array and a rule code rather than
	// closures keep a send's admission to one allocation (the ticket).
	var limits [3]limit
	n := 0
	count := !m.Booking
	var hist *coldHistory
	if s.set.ColdStart > 0 {
		var err error
		if hist, err = s.history(ctx, m.WorkspaceID, day, at, now); err != nil {
			return nil, err
		}
	}
	// The workspace's day row is kept whenever a rule reads it: the daily
	// quota, the reputation rule's 7 days of sends, the cold throttle.
	if s.set.DailyQuota > 0 || s.reputationOn() || hist != nil {
		limits[n] = limit{k: ckey{m.WorkspaceID, "", day}, max: s.set.DailyQuota, rule: dailyQuota}
		n++
	}
	if s.set.MonthlyQuota > 0 {
		limits[n] = limit{k: ckey{m.WorkspaceID, "", month}, max: s.set.MonthlyQuota, rule: monthlyQuota}
		n++
	}
	if (s.set.AddressDailyCap > 0 || hist != nil) && m.From != "" {
		limits[n] = limit{k: ckey{m.WorkspaceID, m.From, day}, max: s.set.AddressDailyCap, rule: addressCap}
		n++
	}
	for _, l := range limits[:n] {
		if err := s.ensure(ctx, l.k); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range limits[:n] {
		c := s.get(l.k, now)
		if l.max > 0 && c.loaded && c.total >= int64(l.max) {
			return nil, s.refusal(l.rule, m.From, at, now)
		}
		if hist != nil && l.rule != monthlyQuota && c.loaded {
			if a := hist.allowance(l.k.subject); c.total >= a {
				return nil, s.coldRefusal(m.WorkspaceID, l.k.subject, a, at, now)
			}
		}
	}
	if dry {
		if m.Due {
			return nil, nil
		}
		_, err := s.throttle(m, now, true)
		return nil, err
	}
	t := &Ticket{s: s, ws: m.WorkspaceID}
	if !m.Due {
		minute, err := s.throttle(m, now, false)
		if err != nil {
			return nil, err
		}
		t.minute, t.n = minute, 1
	}
	if count {
		for _, l := range limits[:n] {
			c := s.get(l.k, now)
			c.total++
			c.pending.sends++
			c.used = now
			t.keys[t.nkeys] = l.k
			t.nkeys++
		}
	}
	return t, nil
}

// limit is one counted rule a send must pass.
type limit struct {
	k    ckey
	max  int
	rule int
}

const (
	dailyQuota = iota
	monthlyQuota
	addressCap
)

// refusal is the 429 of a limit that is reached.
func (s *Service) refusal(rule int, from string, at, now time.Time) error {
	switch rule {
	case dailyQuota:
		return quotaErr("daily", s.set.DailyQuota, nextDay(at), now)
	case monthlyQuota:
		return quotaErr("monthly", s.set.MonthlyQuota, nextMonth(at), now)
	default:
		reset := nextDay(at)
		return withReset(apierr.New(429, "address_daily_cap_reached", "%s has sent its %d emails for today (UTC); the cap resets at %s.", from, s.set.AddressDailyCap, reset.Format(time.RFC3339)), reset, now)
	}
}

// reputationOn says whether the pause rule reads the sends of the last days.
func (s *Service) reputationOn() bool {
	return s.set.PauseBounceRate > 0 || s.set.PauseComplaintRate > 0
}

func quotaErr(which string, max int, reset, now time.Time) error {
	return withReset(apierr.New(429, "quota_exhausted", "The workspace has used its %s allowance of %d emails; it resets at %s.", which, max, reset.Format(time.RFC3339)), reset, now)
}

// withReset tells when a refused send may succeed: resets_at in the error
// object (a batch entry has no headers of its own), the same in next, and
// Retry-After in seconds on a single send.
func withReset(e *apierr.Error, reset, now time.Time) *apierr.Error {
	at := reset.UTC().Format(time.RFC3339)
	return e.WithNext(fmt.Sprintf("Retry after %s.", at)).
		With("resets_at", at).WithRetryAfter(int(math.Ceil(reset.Sub(now).Seconds())))
}

// dayKey and monthKey name a counter's period. Nearly every send asks for
// the same day, so the last names made are kept (two allocations a send
// otherwise).
func dayKey(t time.Time) string   { return periodName(&lastDay, t, "d:2006-01-02") }
func monthKey(t time.Time) string { return periodName(&lastMonth, t, "m:2006-01") }

type periodKey struct {
	y, d int
	m    time.Month
	name string
}

var lastDay, lastMonth atomic.Pointer[periodKey]

func periodName(last *atomic.Pointer[periodKey], t time.Time, layout string) string {
	y, m, d := t.Date()
	if layout[0] == 'm' {
		d = 0
	}
	if p := last.Load(); p != nil && p.y == y && p.m == m && p.d == d {
		return p.name
	}
	p := &periodKey{y: y, m: m, d: d, name: t.Format(layout)}
	last.Store(p)
	return p.name
}

func nextDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

func nextMonth(t time.Time) time.Time {
	y, m, _ := t.Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}
