package policy

import (
	"context"
	"strings"
	"time"

	"mailroom/internal/store"
)

// ckey names one counter: a workspace (subject "") or one of its sending
// addresses, in one period (dayKey or monthKey).
type ckey struct{ ws, subject, period string }

// counts are the figures a counter row holds.
type counts struct{ sends, bounces, complaints int64 }

// counter is one counter as this node knows it: total is the database's
// figure when last read plus what this node counted since (meaningful once
// loaded); pending is what this node has yet to add to the database.
type counter struct {
	total   int64
	loaded  bool
	pending counts
	used    time.Time     // last counted or read, to forget idle counters
	loading chan struct{} // non-nil while one caller reads it; closed when done
}

// staleAfter: a counter nobody on this node counted for this long is
// forgotten at the next flush and read again when next needed (another
// node may have moved it meanwhile).
const staleAfter = 10 * time.Second

// ensure makes sure the counter k is loaded on this node, reading it from
// the database the first time (concurrent callers wait for that one read).
func (s *Service) ensure(ctx context.Context, k ckey) error {
	for {
		s.mu.Lock()
		c, ok := s.counters[k]
		if ok && c.loaded {
			s.mu.Unlock()
			return nil
		}
		if ok && c.loading != nil {
			ch := c.loading
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if !ok {
			c = &counter{used: s.clock.Now()}
			s.counters[k] = c
		}
		ch := make(chan struct{})
		c.loading = ch
		s.mu.Unlock()
		total, err := readCounter(ctx, s.db, k)
		s.mu.Lock()
		c.loading = nil
		if err == nil {
			c.total, c.loaded = total+c.pending.sends, true
		}
		close(ch)
		s.mu.Unlock()
		return err
	}
}

// get is the counter k, made (unloaded) when absent. Callers hold s.mu.
func (s *Service) get(k ckey, now time.Time) *counter {
	c, ok := s.counters[k]
	if !ok {
		c = &counter{used: now}
		s.counters[k] = c
	}
	return c
}

// RecordOutcome counts a real send's bounce or complaint against its
// workspace's day, for the reputation rule (evaluated at the next flush).
// Delivery calls it when a recipient bounces or complains; test addresses
// never reach it.
func (s *Service) RecordOutcome(workspaceID string, bounced, complained int) {
	if (bounced == 0 && complained == 0) || !s.reputationOn() {
		return
	}
	now := s.clock.Now().UTC()
	k := ckey{workspaceID, "", dayKey(now)}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.get(k, now)
	c.pending.bounces += int64(bounced)
	c.pending.complaints += int64(complained)
	s.dirty[workspaceID] = judgeFlushes
}

// judgeFlushes: a bounce is judged at this many flushes from the one after
// it, so that sends another node accepted and has yet to flush (it flushes
// every FlushEvery) count too; judged at one flush only, a bounce recorded
// before those sends reached the database never paused the workspace.
const judgeFlushes = 3

// Flush adds this node's pending counts to the database, reads back the
// totals every node wrote, forgets idle counters, and then evaluates the
// reputation rule for workspaces that bounced or complained in the last
// judgeFlushes flushes. Every FlushEvery, and at Stop.
func (s *Service) Flush(ctx context.Context) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	now := s.clock.Now().UTC()
	s.mu.Lock()
	type item struct {
		k ckey
		d counts
	}
	var work []item
	var refresh []ckey
	for k, c := range s.counters {
		if c.loading != nil {
			continue // being read: its pending goes at the next flush
		}
		if c.pending != (counts{}) {
			work = append(work, item{k, c.pending})
			c.pending = counts{}
			continue
		}
		if now.Sub(c.used) > staleAfter || strings.Compare(k.period, periodOf(k.period, now)) < 0 {
			delete(s.counters, k)
		} else if c.loaded {
			refresh = append(refresh, k) // another node may have counted
		}
	}
	dirty := s.dirty
	s.dirty = map[string]int{}
	for ws, n := range dirty {
		if n > 1 {
			s.dirty[ws] = n - 1
		}
	}
	s.mu.Unlock()
	if len(work) > 0 {
		totals := make([]int64, len(work))
		err := s.db.InTx(ctx, func(tx *store.Tx) error {
			for i, w := range work {
				t, err := addCounter(ctx, tx, w.k, w.d)
				if err != nil {
					return err
				}
				totals[i] = t
			}
			return nil
		})
		s.mu.Lock()
		for i, w := range work {
			c := s.get(w.k, now)
			if err != nil {
				c.pending.sends += w.d.sends // put back for the next flush
				c.pending.bounces += w.d.bounces
				c.pending.complaints += w.d.complaints
				continue
			}
			if c.loaded && c.loading == nil {
				// The database's total now includes this node's flushed
				// share; what was counted since is still pending.
				c.total = totals[i] + c.pending.sends
			}
		}
		if err != nil {
			for ws, n := range dirty {
				s.dirty[ws] = max(s.dirty[ws], n)
			}
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	for _, k := range refresh {
		total, err := readCounter(ctx, s.db, k)
		if err != nil {
			return err
		}
		s.mu.Lock()
		if c := s.counters[k]; c != nil && c.loaded && c.loading == nil {
			c.total = total + c.pending.sends
		}
		s.mu.Unlock()
	}
	for ws := range dirty {
		if err := s.evaluate(ctx, ws, now); err != nil {
			return err
		}
	}
	return s.flushCold(ctx, now)
}

// periodOf is the current period of the same kind as p.
func periodOf(p string, now time.Time) string {
	if strings.HasPrefix(p, "m:") {
		return monthKey(now)
	}
	return dayKey(now)
}
