package policy

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/events"
	"mailroom/internal/store"
)

// The cold-sending throttle (MAILROOM_COLD_START, MAILROOM_COLD_GROWTH;
// docs/decisions.md, "Sending policy"): a workspace, and each of its
// sending addresses, may send in a UTC day at most max(start, growth × its
// busiest day of the previous 7), read from the day counters. The first
// refusal raises workspace.throttled (once: a hold row marks the state);
// a whole UTC day without a refusal clears it (workspace.resumed).

// coldSubject is the counter subject of a workspace's throttle refusals per
// day (no address has no @, so it never meets one).
const coldSubject = "~cold"

// coldHistory is what the throttle knows of a workspace's previous 7 days:
// the busiest day of each counter subject ("" the workspace, else an
// address), read once a day per node.
type coldHistory struct {
	busiest map[string]int64
	// addresses says whether any address of the workspace has a day row in
	// the window; without one its addresses' history is unknown (the rule
	// just switched on) and they get the workspace's allowance.
	addresses bool
	start     int64
	growth    float64
}

// allowance is the day's allowance of subject ("" the workspace).
func (h *coldHistory) allowance(subject string) int64 {
	if subject != "" && !h.addresses {
		subject = ""
	}
	return max(h.start, int64(math.Floor(h.growth*float64(h.busiest[subject]))))
}

// history answers the workspace's history before day (at's UTC day),
// reading it the first time a node needs it that day. Two first callers may
// both read it; the reads are the same. A future day's (a booking's) is
// read each time and never kept: its previous days are not over.
func (s *Service) history(ctx context.Context, ws, day string, at, now time.Time) (*coldHistory, error) {
	k := [2]string{ws, day}
	s.mu.Lock()
	h := s.cold[k]
	s.mu.Unlock()
	if h != nil {
		return h, nil
	}
	periods := make([]string, 7)
	for i := range periods {
		periods[i] = dayKey(at.AddDate(0, 0, -1-i))
	}
	rows, err := busiestDays(ctx, s.db, ws, periods)
	if err != nil {
		return nil, err
	}
	h = &coldHistory{busiest: rows, start: int64(s.set.ColdStart), growth: s.set.ColdGrowth}
	for subject := range rows {
		if strings.IndexByte(subject, '@') > 0 {
			h.addresses = true
		}
	}
	if day <= dayKey(now) {
		s.mu.Lock()
		s.cold[k] = h
		s.mu.Unlock()
	}
	return h, nil
}

// coldRefusal counts a refusal of the throttle against today and, when the
// workspace is not yet throttled, has the next flush raise
// workspace.throttled. Callers hold s.mu.
func (s *Service) coldRefusal(ws, subject string, allowance int64, at, now time.Time) error {
	c := s.get(ckey{ws, coldSubject, dayKey(now)}, now)
	c.pending.sends++
	c.used = now
	if _, ok := s.holds.Load().throttled[ws]; !ok && s.coldNew[ws] == nil {
		s.coldNew[ws] = map[string]any{"allowance": allowance, "subject": subject}
	}
	who := "The workspace"
	if subject != "" {
		who = "The sending address " + subject
	}
	reset := nextDay(at)
	return withReset(apierr.New(429, "velocity_spike",
		"%s is sending cold: it has used today's allowance of %d emails (UTC), which grows with its sending history (%g times its busiest day of the last 7, at least %d); it is throttled.",
		who, allowance, s.set.ColdGrowth, s.set.ColdStart), reset, now).
		With("throttle", "cold_sending").
		WithNext("Retry after " + reset.Format(time.RFC3339) + "; ramp up over days rather than sending a new list all at once.")
}

// flushCold runs at each flush: it raises workspace.throttled for the
// workspaces first refused since the last flush, forgets past days'
// histories, and clears the throttle of a workspace whose whole previous
// UTC day went without a refusal (workspace.resumed), looking once a day.
func (s *Service) flushCold(ctx context.Context, now time.Time) error {
	today := dayKey(now)
	s.mu.Lock()
	fresh := s.coldNew
	if len(fresh) > 0 {
		s.coldNew = map[string]map[string]any{}
	}
	for k := range s.cold {
		if k[1] < today {
			delete(s.cold, k)
		}
	}
	s.mu.Unlock()
	changed := false
	for ws, data := range fresh {
		err := s.db.InTx(ctx, func(tx *store.Tx) error {
			added, err := putHold(ctx, tx, Hold{WorkspaceID: ws, Kind: KindThrottled, Reason: "cold sending", CreatedAt: now})
			if err != nil || !added {
				return err
			}
			changed = true
			d := map[string]any{"workspace_id": ws, "reason": "cold sending: a new workspace or address sending more than its history allows",
				"throttle": "cold_sending", "throttled_at": now.Format(time.RFC3339)}
			for k, v := range data {
				d[k] = v
			}
			_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: ws, Type: events.WorkspaceThrottle, CreatedAt: now, Data: d})
			return err
		})
		if err != nil {
			return err
		}
	}
	yesterday := dayKey(now.AddDate(0, 0, -1))
	for ws, h := range s.holds.Load().throttled {
		s.mu.Lock()
		seen := s.coldChecked[ws] == today
		s.coldChecked[ws] = today
		var pending int64
		if c := s.counters[ckey{ws, coldSubject, today}]; c != nil {
			pending = c.pending.sends
		}
		s.mu.Unlock()
		if seen || pending > 0 || dayKey(h.CreatedAt) >= yesterday {
			continue
		}
		cleared, err := s.clearCold(ctx, ws, yesterday, today, now)
		if err != nil {
			return err
		}
		changed = changed || cleared
	}
	if changed {
		return s.Refresh(ctx)
	}
	return nil
}

// clearCold lifts a workspace's throttle when neither yesterday nor today
// so far saw a refusal; it answers whether it did.
func (s *Service) clearCold(ctx context.Context, ws, yesterday, today string, now time.Time) (bool, error) {
	for _, day := range []string{yesterday, today} {
		n, err := readCounter(ctx, s.db, ckey{ws, coldSubject, day})
		if err != nil || n > 0 {
			return false, err
		}
	}
	var cleared bool
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if cleared, err = dropHold(ctx, tx, ws, KindThrottled, ""); err != nil || !cleared {
			return err
		}
		_, err = events.Raise(ctx, tx, events.Event{WorkspaceID: ws, Type: events.WorkspaceResumed, CreatedAt: now,
			Data: map[string]any{"workspace_id": ws, "reason": fmt.Sprintf("the cold-sending throttle cleared after a clean day (%s)", strings.TrimPrefix(yesterday, "d:")),
				"throttle": "cold_sending", "resumed_at": now.Format(time.RFC3339)}})
		return err
	})
	return cleared, err
}

// Throttled reports whether the workspace's cold-sending throttle is on, as
// this node last read it.
func (s *Service) Throttled(workspaceID string) bool {
	_, ok := s.holds.Load().throttled[workspaceID]
	return ok
}
