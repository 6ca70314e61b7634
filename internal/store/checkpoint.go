package store

import (
	"context"
	"time"
)

// checkpointer copies the WAL back into the database file every 200 ms
// from its own connection. A final TRUNCATE checkpoint on Close leaves a
// small WAL behind.
func (db *DB) checkpointer() {
	defer close(db.ckptDone)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-db.ckptStop:
			db.ckpt.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
			return
		case <-t.C:
			db.ckpt.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
			db.walTurn.Store(true) // see FinishWAL
		}
	}
}

// FinishWAL is called by a busy writer between its transactions. SQLite
// starts the WAL over only when a write transaction begins with every frame
// already in the database file, which a background checkpoint never
// achieves under sustained writes: the log would grow without end, and
// appending costs a commit more than overwriting. So after each background
// pass the writer copies the few frames written meanwhile itself (a PASSIVE
// checkpoint that waits for nobody) and its next transaction starts the log
// over. Figures: docs/performance.md, "store".
func (db *DB) FinishWAL(ctx context.Context) {
	if db.Dialect == SQLite && db.walTurn.CompareAndSwap(true, false) {
		db.W.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}

// durable returns once every write committed so far is on disk (SQLite:
// see walSync; PostgreSQL's commits are durable when they return).
func (db *DB) durable() error {
	if db.wal == nil {
		return nil
	}
	return db.wal.wait(db.wal.committed())
}
