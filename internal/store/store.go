// Package store is Mailroom's persistence: one database/sql handle per
// dialect (embedded SQLite or PostgreSQL), embedded goose migrations numbered
// alike for both, and the transaction helpers every service uses. SQL is kept
// in the common subset and written with ? placeholders (Rebind turns them
// into $n for PostgreSQL); each real dialect difference is a method here
// (dialect.go), so services never test which database is in use.
//
// The files, by responsibility:
//
//   - open.go: connecting to either dialect and each pool's settings
//   - tx.go, deferred.go: transactions, commit-later, deferred multi-row inserts
//   - migrate.go: the common and per-dialect migrations
//   - dialect.go: the named differences (row locking, River's driver)
//   - errors.go: ErrNotFound and constraint failures in both dialects
//   - walsync.go, checkpoint.go, epoch_*.go: SQLite durability (flushing the
//     WAL outside the writer, background checkpoints, the shared keys epoch)
//   - unnest.go, guard.go, pgdirect.go, pqarrays.go: the PostgreSQL send
//     path (one-statement batch inserts, guarded writes, direct encoding)
//   - stmtcache.go, placeholders.go, millis.go: statement cache, query text
//     and stored-time helpers
package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
)

// Dialect names the SQL database in use.
type Dialect int

const (
	SQLite Dialect = iota
	Postgres
)

func (d Dialect) String() string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// DB is the database handle. Writes go through W; on SQLite W has exactly one
// connection (SQLite allows one writer, and one connection avoids SQLITE_BUSY
// storms) while R is a pool of readers that WAL lets run beside the writer. On
// PostgreSQL both are the same pool.
type DB struct {
	W       *sql.DB
	R       *sql.DB
	Dialect Dialect
	rebinds sync.Map // query -> rebound query (PostgreSQL)
	hook    BeforeCommitHook
	signals sync.Map // topic -> chan struct{}
	// coltypes: table -> column -> PostgreSQL type name (see insertUnnest).
	coltypes sync.Map
	// direct counts statements run through queryDirect (tests check that
	// the group commit's statement takes that path).
	direct atomic.Uint64
	// Prepared statements per pool (SQLite only: pgx caches per connection
	// itself): modernc's SQLite re-parses every unprepared statement.
	wstmts, rstmts *stmtCache

	// SQLite only: the background checkpoint connection (see checkpointer).
	ckpt               *sql.DB
	ckptStop, ckptDone chan struct{}
	walTurn            atomic.Bool // a background pass ended since the writer's last FinishWAL
	wal                *walSync    // SQLite only: flushes the WAL before a commit is answered

	// SQLite only: the counter every process on this file shares (see
	// KeysEpoch). Its page stays mapped after Close: a request still in
	// flight may read it, and a process opens its database once.
	keysEpoch *atomic.Uint64
}

// KeysEpoch is a counter that every process serving this database sees
// change the moment one of them adds to it, without reading the database:
// a process that caches what the database says of API keys compares it
// before trusting the cache, and a process that revokes a key adds to it
// after the revocation commits. It exists for SQLite, where every process
// on a database file is on one host (a file maps into each of them); on
// PostgreSQL, whose nodes share nothing but the database, it is nil.
func (db *DB) KeysEpoch() *atomic.Uint64 { return db.keysEpoch }

// Close releases both pools.
func (db *DB) Close() error {
	db.wstmts.close()
	db.rstmts.close()
	var err error
	if db.ckpt != nil {
		close(db.ckptStop)
		<-db.ckptDone
		err = db.ckpt.Close()
	}
	err = errors.Join(err, db.W.Close())
	if db.wal != nil {
		db.wal.close()
	}
	if db.R != db.W {
		err = errors.Join(err, db.R.Close())
	}
	return err
}

// Ping checks the database answers (for /readyz).
func (db *DB) Ping(ctx context.Context) error { return db.W.PingContext(ctx) }

// Exec runs a write outside any explicit transaction; on SQLite it returns
// once the write is on disk.
func (db *DB) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	var res sql.Result
	var err error
	if st := db.wstmts.get(q); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = db.W.ExecContext(ctx, db.Rebind(q), args...)
	}
	if err == nil {
		err = db.durable()
	}
	return res, err
}

// Query reads from the reader pool.
func (db *DB) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := db.rstmts.get(q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return db.R.QueryContext(ctx, db.Rebind(q), args...)
}

// Column reads a query of one text column on the reader pool, as []any
// ready to pass to an IN (...) of the write that follows.
func (db *DB) Column(ctx context.Context, q string, args ...any) ([]any, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []any
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// QueryRow reads one row from the reader pool.
func (db *DB) QueryRow(ctx context.Context, q string, args ...any) *Row {
	if st := db.rstmts.get(q); st != nil {
		return &Row{row: st.QueryRowContext(ctx, args...)}
	}
	return &Row{row: db.R.QueryRowContext(ctx, db.Rebind(q), args...)}
}

// Row is the result of QueryRow: the row, or the error that kept the
// statement from running.
type Row struct {
	row *sql.Row
	err error
}

// Scan copies the row's columns into dest, as sql.Row.Scan does, except
// that no row is ErrNotFound: the one place where not-found is mapped, so
// that services never see sql.ErrNoRows.
func (r *Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// Signals returns the channel that Signal(topic) wakes. Workers wait on it
// beside their poll timer so that fresh work starts at once on this node;
// other nodes find it on their next poll.
func (db *DB) Signals(topic string) <-chan struct{} {
	ch, _ := db.signals.LoadOrStore(topic, make(chan struct{}, 1))
	return ch.(chan struct{})
}

// Signal wakes the waiter on topic without blocking.
func (db *DB) Signal(topic string) {
	ch, _ := db.signals.LoadOrStore(topic, make(chan struct{}, 1))
	select {
	case ch.(chan struct{}) <- struct{}{}:
	default:
	}
}
