package store

import (
	"context"
	"database/sql"
	"errors"
)

// Tx is a write transaction. Jobs added with AddJob are inserted into the
// queue inside the same transaction just before it commits (see Jobs).
//
// On PostgreSQL the transaction begins lazily, at its first statement. A
// transaction that only reads (Read) and defers inserts never needs one: its
// reads run on the pool and its rows go in one INSERT statement, which
// commits on its own: fewer round trips, each of which under load waits
// for the database's process to be scheduled.
type Tx struct {
	sqlTx   *sql.Tx // nil until begun (PostgreSQL begins lazily)
	db      *DB
	pending []any // queue inserts gathered for the commit hook
	after   []func()
	inserts []*deferred
	flush   []func(ctx context.Context, tx *Tx) error
	locals  map[any]any
	guard   *Guard
}

// Local returns the value this transaction keeps under key, made by mk on
// first use. It lets a package gather per-transaction state (say, the
// workspaces whose events need a lookup) without a field here for each.
func (tx *Tx) Local(key any, mk func() any) any {
	if v, ok := tx.locals[key]; ok {
		return v
	}
	if tx.locals == nil {
		tx.locals = map[any]any{}
	}
	v := mk()
	tx.locals[key] = v
	return v
}

// Dialect of the transaction's database.
func (tx *Tx) Dialect() Dialect { return tx.db.Dialect }

// begin starts the database transaction if it has not begun.
func (tx *Tx) begin(ctx context.Context) (*sql.Tx, error) {
	if tx.sqlTx == nil {
		t, err := tx.db.W.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		tx.sqlTx = t
	}
	return tx.sqlTx, nil
}

// Exec runs a statement inside the transaction.
func (tx *Tx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	t, err := tx.begin(ctx)
	if err != nil {
		return nil, err
	}
	if st := tx.db.wstmts.get(q); st != nil {
		return t.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.ExecContext(ctx, tx.db.Rebind(q), args...)
}

// Query reads inside the transaction.
func (tx *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	t, err := tx.begin(ctx)
	if err != nil {
		return nil, err
	}
	if st := tx.db.wstmts.get(q); st != nil {
		return t.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.QueryContext(ctx, tx.db.Rebind(q), args...)
}

// Read is a plain read (no FOR UPDATE) that need not see this transaction's
// own writes. On PostgreSQL, before the transaction has begun, it runs on
// the pool: under READ COMMITTED each statement takes a fresh snapshot and a
// plain read holds no lock, so it sees what the same statement would have
// seen inside, and it does not begin the transaction (see Tx).
func (tx *Tx) Read(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if tx.db.Dialect == Postgres && tx.sqlTx == nil {
		return tx.db.W.QueryContext(ctx, tx.db.Rebind(q), args...)
	}
	return tx.Query(ctx, q, args...)
}

// QueryRow reads one row inside the transaction.
func (tx *Tx) QueryRow(ctx context.Context, q string, args ...any) *Row {
	t, err := tx.begin(ctx)
	if err != nil {
		return &Row{err: err}
	}
	if st := tx.db.wstmts.get(q); st != nil {
		return &Row{row: t.StmtContext(ctx, st).QueryRowContext(ctx, args...)}
	}
	return &Row{row: t.QueryRowContext(ctx, tx.db.Rebind(q), args...)}
}

// AddJob records a queue insert to be made in this transaction before commit.
// The value is whatever the commit hook (set by the jobs package) understands.
func (tx *Tx) AddJob(j any) { tx.pending = append(tx.pending, j) }

// AfterCommit runs f once the transaction has committed (e.g. to wake a worker).
func (tx *Tx) AfterCommit(f func()) { tx.after = append(tx.after, f) }

// BeforeCommitHook inserts the jobs gathered with AddJob. The jobs package
// installs it; it runs inside the transaction so that rows and their jobs
// commit together or not at all.
type BeforeCommitHook func(ctx context.Context, tx *sql.Tx, jobs []any) error

// SetBeforeCommit installs the hook that inserts queued jobs. Call it once,
// while wiring the application, before any transaction adds a job.
func (db *DB) SetBeforeCommit(h BeforeCommitHook) { db.hook = h }

func (db *DB) beforeCommit() BeforeCommitHook { return db.hook }

// Begin starts a write transaction: at once on SQLite (BEGIN IMMEDIATE
// takes the one writer's lock), at its first statement on PostgreSQL.
func (db *DB) Begin(ctx context.Context) (*Tx, error) {
	tx := &Tx{db: db}
	if db.Dialect == SQLite {
		if _, err := tx.begin(ctx); err != nil {
			return nil, err
		}
	}
	return tx, nil
}

// Commit inserts pending jobs, commits, waits until the commit is on disk,
// then runs the after-commit functions.
func (tx *Tx) Commit(ctx context.Context) error {
	wait, err := tx.CommitLater(ctx)
	if err != nil || wait == nil {
		return err
	}
	return wait()
}

// CommitLater commits and returns at once; wait returns when the commit is
// on disk (nothing may be answered before), and runs the after-commit
// functions. On SQLite the writer is free for the next transaction while
// the disk works. A nil wait means the commit was durable when it returned
// (PostgreSQL) and the after-commit functions have run.
func (tx *Tx) CommitLater(ctx context.Context) (wait func() error, err error) {
	if err := tx.flushInserts(ctx); err != nil {
		tx.Rollback()
		return nil, err
	}
	if len(tx.pending) > 0 {
		h := tx.db.beforeCommit()
		if h == nil {
			tx.Rollback()
			return nil, errors.New("store: jobs added but no queue is installed")
		}
		t, err := tx.begin(ctx)
		if err != nil {
			return nil, err
		}
		if err := h(ctx, t, tx.pending); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	var n uint64
	if tx.sqlTx != nil {
		if err := tx.sqlTx.Commit(); err != nil {
			return nil, err
		}
		if tx.db.wal != nil {
			n = tx.db.wal.committed()
		}
	}
	if n == 0 {
		tx.runAfter()
		return nil, nil
	}
	return func() error {
		if err := tx.db.wal.wait(n); err != nil {
			return err
		}
		tx.runAfter()
		return nil
	}, nil
}

func (tx *Tx) runAfter() {
	for _, f := range tx.after {
		f()
	}
}

// Rollback abandons the transaction.
func (tx *Tx) Rollback() error {
	if tx.sqlTx == nil {
		return nil
	}
	return tx.sqlTx.Rollback()
}

// InTx runs fn in a write transaction and commits when it returns nil.
func (db *DB) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	wait, err := db.InTxLater(ctx, fn)
	if err != nil || wait == nil {
		return err
	}
	return wait()
}

// InTxLater is InTx that returns once committed (see CommitLater).
func (db *DB) InTxLater(ctx context.Context, fn func(tx *Tx) error) (wait func() error, err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx.CommitLater(ctx)
}

// DB returns the database the transaction belongs to.
func (tx *Tx) DB() *DB { return tx.db }

// Querier is what both *DB and *Tx offer, so an area's read or write can run
// inside the caller's transaction or on its own.
type Querier interface {
	Exec(ctx context.Context, q string, args ...any) (sql.Result, error)
	Query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRow(ctx context.Context, q string, args ...any) *Row
}

var (
	_ Querier = (*DB)(nil)
	_ Querier = (*Tx)(nil)
)
