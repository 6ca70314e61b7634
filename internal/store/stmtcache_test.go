package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// Close waits for the statements still being prepared: one that took a
// connection as its pool closed recreated the database's -wal and -shm files
// after Close returned (a test's TempDir cleanup then found files).
func TestStmtCacheCloseWaitsForPrepares(t *testing.T) {
	ctx := context.Background()
	for i := range 20 {
		pool, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "c.db")+"?_pragma=journal_mode(WAL)")
		if err != nil {
			t.Fatal(err)
		}
		c := newStmtCache(pool)
		for j := range 16 {
			q := fmt.Sprintf("SELECT %d", j)
			c.get(q)
			pool.QueryRowContext(ctx, q).Scan(new(int))
		}
		c.close()
		pool.Close()
		if n := pool.Stats().OpenConnections; n != 0 {
			t.Fatalf("run %d: %d connections still open after the cache and its pool closed", i, n)
		}
	}
}
