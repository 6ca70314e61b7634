package inbound

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/mailauth"
)

// txtCacheFor is how long an answer to a TXT lookup of the receiving checks
// (the SPF policy, a DKIM key, a DMARC record) is reused: a sender's mail
// arrives in runs, and each message asked the same three questions again
// (issue 47: about 5% of a received message's CPU, the resolver's share
// aside). A minute is under the TTL of nearly every published record, as a
// caching resolver would serve them anyway; a changed key or policy is
// seen at most a minute late.
const txtCacheFor = time.Minute

// txtCacheMax bounds the names remembered; when full the cache starts over.
const txtCacheMax = 10000

// txtCache is a mailauth.Resolver that remembers TXT answers (records, or
// that the name has none) for txtCacheFor; failures to ask (a timeout,
// SERVFAIL) are never remembered, nor the other lookups (SPF's a, mx and
// ptr mechanisms), which pass through.
type txtCache struct {
	mailauth.Resolver
	clock clock.Clock

	mu      sync.Mutex
	entries map[string]txtEntry
}

type txtEntry struct {
	txt     []string
	err     error // a not-found error, or nil
	expires time.Time
}

func newTXTCache(r mailauth.Resolver, c clock.Clock) *txtCache {
	return &txtCache{Resolver: r, clock: c, entries: map[string]txtEntry{}}
}

// LookupTXT answers from the cache or asks the resolver; callers must not
// change the slice returned.
func (c *txtCache) LookupTXT(ctx context.Context, name string) ([]string, error) {
	key := strings.ToLower(strings.TrimSuffix(name, "."))
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.txt, e.err
	}
	txt, err := c.Resolver.LookupTXT(ctx, name)
	var dnsErr *net.DNSError
	if err == nil || (errors.As(err, &dnsErr) && dnsErr.IsNotFound) {
		c.mu.Lock()
		if len(c.entries) >= txtCacheMax {
			clear(c.entries)
		}
		c.entries[key] = txtEntry{txt: txt, err: err, expires: now.Add(txtCacheFor)}
		c.mu.Unlock()
	}
	return txt, err
}
