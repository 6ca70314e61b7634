package policy

import (
	"context"
	"sync"
	"time"
)

// ipCacheTTL bounds how long a node keeps a workspace's list of dedicated
// IPs for choosing the source of its mail: a take, release or PATCH on
// this node is seen at once, on another node within this.
const ipCacheTTL = 5 * time.Second

type ipCache struct {
	mu sync.Mutex
	m  map[string]ipEntry
}

type ipEntry struct {
	ips   []IP
	until time.Time
}

// PickSource chooses the address a workspace's next message leaves from
// and counts the message against it: the first of its dedicated IPs that
// is not paused and is under today's limit (the warm-up allowance, lowered
// by its daily cap). It answers "" (the shared pool: the node's own
// address) when the workspace has none, or when every one is paused or
// full for the day: traffic above the warm-up spills to the shared pool
// rather than waiting for tomorrow (docs/decisions.md).
func (s *Service) PickSource(ctx context.Context, ws string) (string, error) {
	ips, err := s.cachedIPs(ctx, ws)
	if err != nil || len(ips) == 0 {
		return "", err
	}
	now := s.clock.Now().UTC()
	day := dayKey(now)
	for _, ip := range ips {
		if ip.Paused {
			continue
		}
		k := ckey{ws, "ip:" + ip.IP, day}
		if err := s.ensure(ctx, k); err != nil {
			return "", err
		}
		lim := Limit(ip, now)
		s.mu.Lock()
		c := s.get(k, now)
		if lim == nil || c.total < *lim {
			c.total++
			c.pending.sends++
			c.used = now
			s.mu.Unlock()
			return ip.IP, nil
		}
		s.mu.Unlock()
	}
	return "", nil
}

// IPSends is what an IP sent today as this node counts it (for tests and
// the IP's read).
func (s *Service) IPSends(ctx context.Context, ws, ip string) (int64, error) {
	now := s.clock.Now().UTC()
	k := ckey{ws, "ip:" + ip, dayKey(now)}
	if err := s.ensure(ctx, k); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(k, now).total, nil
}

func (s *Service) cachedIPs(ctx context.Context, ws string) ([]IP, error) {
	now := s.clock.Now()
	s.ipCache.mu.Lock()
	e, ok := s.ipCache.m[ws]
	s.ipCache.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.ips, nil
	}
	ips, err := listIPs(ctx, s.db, ws)
	if err != nil {
		return nil, err
	}
	s.ipCache.mu.Lock()
	if s.ipCache.m == nil {
		s.ipCache.m = map[string]ipEntry{}
	}
	s.ipCache.m[ws] = ipEntry{ips: ips, until: now.Add(ipCacheTTL)}
	s.ipCache.mu.Unlock()
	return ips, nil
}

// forgetIPs drops the workspace's cached list after a change on this node.
func (s *Service) forgetIPs(ws string) {
	s.ipCache.mu.Lock()
	delete(s.ipCache.m, ws)
	s.ipCache.mu.Unlock()
}
