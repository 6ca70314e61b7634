package workspaces

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"mailroom/internal/store"
)

// keyLookup reads API keys by hash for concurrent requests in shared
// queries. Every request still reads the database after it arrived, so a
// revocation committed on any node applies to the very next request; what
// is shared is the round trip. Under load one query answers the dozens of
// requests that arrived while the previous one ran; on PostgreSQL that was
// a sixth of a send's CPU spent on a query per request.
//
// On SQLite it also remembers the keys it found, for as long as the
// database's KeysEpoch stays where it was when they were read: every
// process on the file revokes by deleting the row and then adding to that
// shared counter before it answers, so a request that arrives after a
// revocation was answered never finds the key in any cache. The database
// read was a tenth of a send's CPU there (1.4 requests per query: a read
// costs less than the time it takes requests to gather). PostgreSQL nodes
// share no memory: there a remembered key is only a claim, which a send
// may act on until its commit reads the key again (AuthenticateForSend);
// every other request reads.
type keyLookup struct {
	db    *store.DB
	epoch *atomic.Uint64 // nil: no cache
	cache sync.Map       // key hash -> *cachedKey
	size  atomic.Int64   // entries stored, to bound the cache

	mu      sync.Mutex
	pending []*keyReq
	running int           // serving goroutines
	wake    chan struct{} // tells an idle server that requests are pending
}

// maxLookupServers bounds the lookups in flight at once: one query runs
// while the next batch gathers.
const maxLookupServers = 2

// serverLinger is how long an idle server waits for more requests before it
// exits. A new goroutine grows its stack again to SQLite's depth on its first
// query (a copy of the stack each time, 2% of a send's CPU when servers came
// and went between bursts), so under load they stay.
const serverLinger = 100 * time.Millisecond

// maxLookupBatch bounds the requests one query answers (its IN list is
// padded with store.PaddedIn, so a handful of statements are ever prepared).
const maxLookupBatch = 64

type keyReq struct {
	hash string
	done chan keyResult
}

type keyResult struct {
	row *keyRow // nil: no such key
	err error
}

// keyRow is what a key's hash finds.
type keyRow struct {
	id, workspaceID, name, scopes, hash, ownerEmail string
	mailboxID, mailboxAddress                       string // "" for an unbound key
	domainID, domainName                            string // "" for a key not restricted to a domain
	createdAt                                       int64
	confirmed                                       int
}

// cachedKey is a key as read while the epoch was at epoch.
type cachedKey struct {
	row   *keyRow
	epoch uint64
	at    time.Time
}

// cacheTTL bounds how long a cached key is trusted even with the epoch
// unchanged: a process that died between committing a revocation and adding
// to the epoch left the others unaware (a retried DELETE, answered 404,
// adds to it again).
const cacheTTL = time.Minute

// cacheMax bounds the cache (keys that authenticated, so few in practice).
const cacheMax = 10000

// find returns the key with hash, or nil. With unconfirmed set it may
// answer from memory a key that another node has since revoked, and says
// so (confirmed false); the caller must then read the key again before it
// acts on anything (see AuthenticateForSend).
func (l *keyLookup) find(ctx context.Context, hash string, unconfirmed bool) (row *keyRow, confirmed bool, err error) {
	if v, ok := l.cache.Load(hash); ok {
		c := v.(*cachedKey)
		if time.Since(c.at) < cacheTTL {
			switch {
			case l.epoch != nil && c.epoch == l.epoch.Load():
				return c.row, true, nil
			case l.epoch == nil && unconfirmed:
				return c.row, false, nil
			}
		}
	}
	r := &keyReq{hash: hash, done: make(chan keyResult, 1)}
	l.mu.Lock()
	l.pending = append(l.pending, r)
	if l.wake == nil {
		l.wake = make(chan struct{}, 1)
	}
	if l.running < maxLookupServers {
		l.running++
		go l.serve()
	} else {
		select {
		case l.wake <- struct{}{}:
		default: // a wake-up is already due
		}
	}
	l.mu.Unlock()
	select {
	case res := <-r.done:
		return res.row, true, res.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// serve answers pending requests in batches until none have come for
// serverLinger.
func (l *keyLookup) serve() {
	idle := time.NewTimer(serverLinger)
	defer idle.Stop()
	for {
		l.mu.Lock()
		n := min(len(l.pending), maxLookupBatch)
		if n == 0 {
			l.mu.Unlock()
			idle.Reset(serverLinger)
			select {
			case <-l.wake:
				continue
			case <-idle.C:
			}
			l.mu.Lock()
			if len(l.pending) == 0 {
				// Whoever queues next sees running below the bound and starts
				// a server; nothing queued under this lock is left behind.
				l.running--
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
			continue
		}
		batch := make([]*keyReq, n)
		copy(batch, l.pending)
		l.pending = append(l.pending[:0], l.pending[n:]...)
		l.mu.Unlock()
		rows, err := l.query(batch)
		for _, r := range batch {
			r.done <- keyResult{row: rows[r.hash], err: err}
		}
	}
}

func (l *keyLookup) query(batch []*keyReq) (map[string]*keyRow, error) {
	// Most batches are one client's requests under one key: each hash is
	// asked once.
	hashes := make([]string, 0, len(batch))
	seen := make(map[string]bool, len(batch))
	for _, r := range batch {
		if !seen[r.hash] {
			seen[r.hash] = true
			hashes = append(hashes, r.hash)
		}
	}
	// The epoch is read before the query: a revocation that commits while
	// it runs moves the epoch on, and what the query found is stale at once.
	var epoch uint64
	if l.epoch != nil {
		epoch = l.epoch.Load()
	}
	// The requests wait on this query whatever their own contexts do; it is
	// bounded on its own.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	found, err := keysByHash(ctx, l.db, hashes)
	if err != nil {
		return nil, err
	}
	{
		now := time.Now()
		for h, k := range found {
			if l.size.Add(1) > cacheMax {
				l.cache.Clear()
				l.size.Store(1)
			}
			l.cache.Store(h, &cachedKey{row: k, epoch: epoch, at: now})
		}
	}
	return found, nil
}

// revoked tells every process's cache that a key is gone: called after the
// revocation committed and before it is answered.
func (l *keyLookup) revoked() {
	if l.epoch != nil {
		l.epoch.Add(1)
		return
	}
	// This node's claims go at once; other nodes' sends find the key gone
	// when they commit.
	l.cache.Clear()
	l.size.Store(0)
}
