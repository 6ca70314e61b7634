package policy

import (
	"math"
	"slices"
	"time"

	"mailroom/internal/apierr"
)

// window is the trailing window of the velocity rule, in minutes.
const window = 60

// maxBodies bounds the bodies one workspace's duplicate-content rule
// remembers per day on a node; past it the day's memory starts over (the
// rule is a brake on one body sent wide, not an exact census).
const maxBodies = 20000

// wsThrottle is one workspace's throttle state on this node: sends per
// minute over the trailing hour, and the distinct recipients of each body
// sent today. Both are per node: behind a balancer each node sees its share
// of the current minute and of the hour alike, so the velocity ratio holds;
// the duplicate-content count is per node (docs/decisions.md).
type wsThrottle struct {
	minutes [window + 1]int64 // sends per minute, indexed by unix minute mod window+1
	newest  int64             // unix minute of the newest bucket

	day    string
	bodies map[uint64]*bodySeen
}

// bodySeen is the distinct recipients one body reached today, kept up to
// the limit plus one (enough to refuse).
type bodySeen struct{ rcpts map[uint64]struct{} }

// advance moves the ring to minute m, clearing the minutes skipped.
func (w *wsThrottle) advance(m int64) {
	if m <= w.newest {
		return
	}
	if m-w.newest > window {
		w.minutes = [window + 1]int64{}
	} else {
		for x := w.newest + 1; x <= m; x++ {
			w.minutes[x%(window+1)] = 0
		}
	}
	w.newest = m
}

// unsend gives back n sends counted in minute m (Ticket.Undo).
func (w *wsThrottle) unsend(m, n int64) {
	if m > w.newest-window-1 && m <= w.newest {
		w.minutes[m%(window+1)] -= n
	}
}

// throttle applies velocity_spike and duplicate_content_burst to m and, when
// it passes, counts it in the current minute (returned); dry counts and
// remembers nothing. Callers hold s.mu.
func (s *Service) throttle(m Send, now time.Time, dry bool) (int64, error) {
	w := s.spaces[m.WorkspaceID]
	if w == nil {
		w = &wsThrottle{}
		if !dry {
			s.spaces[m.WorkspaceID] = w
		}
	}
	minute := now.Unix() / 60
	w.advance(minute)
	cur := &w.minutes[minute%(window+1)]
	if f := s.set.VelocityFactor; f > 0 {
		var trailing int64
		for i := int64(1); i <= window; i++ {
			trailing += w.minutes[(minute-i)%(window+1)]
		}
		if trailing >= int64(max(s.set.VelocityMinSends, 1)) && float64(*cur+1) > f*float64(trailing)/window {
			reset := time.Unix((minute+1)*60, 0).UTC()
			return 0, withReset(apierr.New(429, "velocity_spike",
				"The workspace is sending %d emails this minute, more than %g times its average of %.1f a minute over the last hour; it is throttled.",
				*cur+1, f, float64(trailing)/window), reset, now)
		}
	}
	if limit := s.set.DuplicateBurst; limit > 0 && (m.Marketing || m.HTML == "") {
		day := dayKey(now)
		if !dry && (w.day != day || len(w.bodies) >= maxBodies) {
			w.day, w.bodies = day, map[uint64]*bodySeen{}
		}
		body := s.hash64(m.HTML, m.Text)
		seen := w.bodies[body]
		if w.day != day || seen == nil {
			seen = &bodySeen{rcpts: map[uint64]struct{}{}}
			if !dry {
				w.bodies[body] = seen
			}
		}
		var fresh []uint64
		for _, r := range m.Recipients {
			h := s.hash64(r)
			if _, ok := seen.rcpts[h]; !ok && !slices.Contains(fresh, h) {
				fresh = append(fresh, h)
			}
		}
		if len(seen.rcpts)+len(fresh) > limit {
			reset := nextDay(now)
			return 0, withReset(apierr.New(429, "duplicate_content_burst",
				"This body has already gone to %d distinct recipients today (UTC); at most %d may receive one body in a day.",
				len(seen.rcpts), limit), reset, now).WithNext("Personalise the body, or send it as a transactional html email; the count resets at " + reset.Format(time.RFC3339) + ".")
		}
		if dry {
			return minute, nil
		}
		for _, h := range fresh {
			seen.rcpts[h] = struct{}{}
		}
	}
	if !dry {
		*cur++
	}
	return minute, nil
}

// ratio is a rate for messages: n over d, 0 when d is 0.
func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(d)*10000) / 10000
}
