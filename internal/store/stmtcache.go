package store

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// stmtCacheMax bounds the statement cache: queries are constant strings in
// practice, but one built with literals must not grow it without end.
const stmtCacheMax = 1024

// stmtCache prepares each query once per pool. Preparing needs a
// connection, and the SQLite writer pool has one that the caller's own
// transaction may hold, so get never blocks: a query seen for the first time
// runs unprepared while a goroutine prepares it for the next use.
type stmtCache struct {
	pool   *sql.DB
	mu     sync.Mutex
	m      map[string]*sql.Stmt // nil value: being prepared (or failed)
	closed bool
	// preparing counts the goroutines still preparing: close waits for them,
	// since one that opened a connection as the pool closed would create the
	// database's -wal and -shm files again after Close returned.
	preparing sync.WaitGroup
}

func newStmtCache(pool *sql.DB) *stmtCache {
	return &stmtCache{pool: pool, m: map[string]*sql.Stmt{}}
}

func (c *stmtCache) get(q string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	st, seen := c.m[q]
	if seen || c.closed || len(c.m) >= stmtCacheMax {
		c.mu.Unlock()
		return st
	}
	c.m[q] = nil
	c.preparing.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.preparing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := c.pool.PrepareContext(ctx, q)
		if err != nil {
			return // stays nil: the query keeps running unprepared
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			st.Close()
			return
		}
		c.m[q] = st
	}()
	return nil
}

func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	for _, st := range c.m {
		if st != nil {
			st.Close()
		}
	}
	c.mu.Unlock()
	c.preparing.Wait() // a late one closes its own statement (closed is set)
}
