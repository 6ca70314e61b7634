// Package store is Mailroom's persistence: one database/sql handle per
// dialect (embedded SQLite or PostgreSQL), embedded goose migrations numbered
// alike for both, and the transaction helpers every service uses. SQL is kept
// in the common subset and written with ? placeholders; Rebind turns them into
// $n for PostgreSQL, so each real dialect difference lives in one place here.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
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

// ErrNotFound is returned by store lookups that find no row; services turn it
// into the spec's not_found for their resource.
var ErrNotFound = errors.New("store: not found")

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
	// itself). modernc's SQLite re-parses every unprepared statement, which
	// was a third of the CPU of a send.
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

//go:embed migrations
var migrations embed.FS

// Open connects to the database named by url: a postgres:// URL for
// PostgreSQL, anything else a file path for embedded SQLite.
func Open(ctx context.Context, url string) (*DB, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		return openPostgres(ctx, url)
	}
	return openSQLite(ctx, url)
}

func openPostgres(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(func(_ context.Context, c *pgx.Conn) error {
		m := c.TypeMap() // see unwrapPQArray
		m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{unwrapPQArray}, m.TryWrapEncodePlanFuncs...)
		return nil
	}))
	db.SetMaxOpenConns(40)
	db.SetMaxIdleConns(40)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	return &DB{W: db, R: db, Dialect: Postgres}, nil
}

func openSQLite(ctx context.Context, path string) (*DB, error) {
	path = strings.TrimPrefix(path, "sqlite://")
	path = strings.TrimPrefix(path, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating database directory: %w", err)
		}
	}
	// synchronous=FULL (NORMAL plus walSync on the writer, below): an
	// acknowledged send survives power loss. Throughput
	// comes from group commit (many sends share one fsync), not from skipping it.
	pragmas := "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=cache_size(-32000)&_pragma=temp_store(MEMORY)"
	// The writer never checkpoints: copying WAL frames into the database
	// file (and its fsync) inside a commit stalled every waiting send. A
	// separate connection checkpoints in the background instead (see
	// checkpointer); PASSIVE checkpoints never block the writer.
	// The writer commits with synchronous=NORMAL and every commit is flushed
	// by walSync before it is answered: FULL's durability, without the
	// writer holding the database while the disk works (see walSync).
	wpragmas := strings.Replace(pragmas, "synchronous(FULL)", "synchronous(NORMAL)", 1)
	w, err := sql.Open("sqlite", "file:"+path+"?"+wpragmas+"&_pragma=wal_autocheckpoint(0)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", "file:"+path+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	r.SetConnMaxIdleTime(0)
	ck, err := sql.Open("sqlite", "file:"+path+"?"+pragmas)
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	ck.SetMaxOpenConns(1)
	db := &DB{W: w, R: r, Dialect: SQLite, wstmts: newStmtCache(w), rstmts: newStmtCache(r), ckpt: ck, ckptStop: make(chan struct{}), ckptDone: make(chan struct{}), wal: &walSync{path: path + "-wal"}}
	// Without the shared counter there is simply no key cache.
	db.keysEpoch, _ = openEpoch(path + "-keys")
	go db.checkpointer()
	return db, nil
}

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
// starts the WAL over (overwriting it from the top) only when a write
// transaction begins with every frame already copied to the database file,
// which a background checkpoint never achieves while the writer keeps
// writing: under sustained load the log grew by every commit (660 MB in a
// ten-second bench), and appending to a file cost each commit's write and
// fsync more than overwriting one. So after each background pass the writer
// copies the few frames written meanwhile itself (a PASSIVE checkpoint that
// waits for nobody) and its next transaction starts the log over: it stays
// at about what 200 ms of writes fill, and sends/s rose 4-9%.
func (db *DB) FinishWAL(ctx context.Context) {
	if db.Dialect == SQLite && db.walTurn.CompareAndSwap(true, false) {
		db.W.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}

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

// Migrate applies every embedded migration for the dialect. Safe to run from
// several processes: PostgreSQL takes an advisory lock, SQLite's single
// writer serialises.
func (db *DB) Migrate(ctx context.Context) error { return db.MigrateTo(ctx, 0) }

// MigrateTo applies the embedded migrations up to version (every one when
// version is 0): a test of a migration's data changes starts below it.
func (db *DB) MigrateTo(ctx context.Context, version int64) error {
	sub, err := fs.Sub(migrations, "migrations/"+db.Dialect.String())
	if err != nil {
		return err
	}
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if db.Dialect == Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(dialect, db.W, sub, opts...)
	if err != nil {
		return fmt.Errorf("loading migrations: %w", err)
	}
	if version > 0 {
		_, err = p.UpTo(ctx, version)
	} else {
		_, err = p.Up(ctx)
	}
	if err != nil {
		return fmt.Errorf("migrating database: %w", err)
	}
	return db.durable()
}

// durable returns once every write committed so far is on disk (SQLite:
// see walSync; PostgreSQL's commits are durable when they return).
func (db *DB) durable() error {
	if db.wal == nil {
		return nil
	}
	return db.wal.wait(db.wal.committed())
}

// Rebind turns ? placeholders into the dialect's form.
func (db *DB) Rebind(q string) string {
	if db.Dialect != Postgres {
		return q
	}
	if v, ok := db.rebinds.Load(q); ok {
		return v.(string)
	}
	r := rebind(q)
	db.rebinds.Store(q, r)
	return r
}

func rebind(q string) string { return rebindFrom(q, 0) }

// rebindFrom numbers q's placeholders from n+1, for a query joined to
// another one's parameters.
func rebindFrom(q string, n int) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	inQuote := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == '\'' {
			inQuote = !inQuote
		}
		if c == '?' && !inQuote {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

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

// QueryRow reads one row from the reader pool.
func (db *DB) QueryRow(ctx context.Context, q string, args ...any) *Row {
	if st := db.rstmts.get(q); st != nil {
		return &Row{row: st.QueryRowContext(ctx, args...)}
	}
	return &Row{row: db.R.QueryRowContext(ctx, db.Rebind(q), args...)}
}

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
	c.mu.Unlock()
	go func() {
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
	defer c.mu.Unlock()
	c.closed = true
	for _, st := range c.m {
		if st != nil {
			st.Close()
		}
	}
}

// Tx is a write transaction. Jobs added with AddJob are inserted into the
// queue inside the same transaction just before it commits (see Jobs).
//
// On PostgreSQL the transaction begins lazily, at its first statement. A
// transaction that only reads (Read) and defers inserts never needs one: its
// reads run on the pool and its rows go in one INSERT statement, which
// commits on its own. That is a group commit of sends in two round trips
// (the lookups, then the insert and its fsync) instead of five (BEGIN, two
// lookups, the insert, COMMIT); under load each round trip waited for the
// database's process to be scheduled.
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

// BeforeFlush registers f to run inside the transaction just before the
// deferred inserts are written: the last moment to settle a value those rows
// carry (a driver.Valuer among their arguments) with one query for all of
// them.
func (tx *Tx) BeforeFlush(f func(ctx context.Context, tx *Tx) error) {
	tx.flush = append(tx.flush, f)
}

// deferred gathers rows of one INSERT shape for a multi-row statement.
type deferred struct {
	table string
	cols  []string
	args  []any // rows × len(cols) values, row by row
	rows  int
}

// DeferInsert queues one row for table (columns cols) to be inserted just
// before the transaction commits, together with every other row queued for
// the same table and columns, in multi-row INSERT statements. A group commit
// of many sends thus runs a handful of statements instead of several per
// send. Use it only for rows nothing in the same transaction reads back.
func (tx *Tx) DeferInsert(table string, cols []string, args ...any) {
	if len(args) != len(cols) {
		panic("store: DeferInsert with " + strconv.Itoa(len(args)) + " values for " + strconv.Itoa(len(cols)) + " columns")
	}
	for _, d := range tx.inserts {
		if d.table == table && slices.Equal(d.cols, cols) {
			d.args = append(d.args, args...)
			d.rows++
			return
		}
	}
	// Room for a few rows: a group commit defers dozens of each kind.
	tx.inserts = append(tx.inserts, &deferred{table: table, cols: cols, args: append(make([]any, 0, 8*len(args)), args...), rows: 1})
}

// insertChunks are the row counts of the multi-row statements; a fixed set
// keeps the number of distinct (prepared) statements small.
var insertChunks = [...]int{64, 16, 4, 1}

func (tx *Tx) flushInserts(ctx context.Context) error {
	for _, f := range tx.flush {
		if err := f(ctx, tx); err != nil {
			return err
		}
	}
	tx.flush = nil
	if tx.guard != nil {
		done, err := tx.flushGuarded(ctx)
		if err != nil || done {
			return err
		}
	}
	if len(tx.inserts) > 0 && tx.db.Dialect == Postgres {
		q, args, ok, err := tx.db.unnestStatement(ctx, tx.inserts)
		if err != nil {
			return err
		}
		if ok {
			tx.inserts = nil
			if tx.sqlTx == nil && len(tx.pending) == 0 {
				// Nothing else to commit: the statement is the transaction.
				_, err = tx.db.W.ExecContext(ctx, q, args...)
				return err
			}
			t, err := tx.begin(ctx)
			if err != nil {
				return err
			}
			_, err = t.ExecContext(ctx, q, args...)
			return err
		}
	}
	for _, d := range tx.inserts {
		prefix := "INSERT INTO " + d.table + " (" + strings.Join(d.cols, ", ") + ") VALUES "
		tuple := "(" + Placeholders(len(d.cols)) + ")"
		width := len(d.cols)
		done := 0
		for _, n := range insertChunks {
			if d.rows-done < n {
				continue
			}
			q := prefix + strings.TrimSuffix(strings.Repeat(tuple+",", n), ",")
			for d.rows-done >= n {
				if _, err := tx.Exec(ctx, q, d.args[done*width:(done+n)*width]...); err != nil {
					return err
				}
				done += n
			}
		}
	}
	tx.inserts = nil
	return nil
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

// Row is the result of QueryRow: the row, or the error that kept the
// statement from running.
type Row struct {
	row *sql.Row
	err error
}

// Scan copies the row's columns into dest, as sql.Row.Scan does.
func (r *Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.row.Scan(dest...)
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

// PaddedIn appends vals (at least one) to args as an IN list padded to the
// next power of two by repeating the last value, which changes nothing in
// an IN list, and returns its placeholders. A query built this way takes
// one of a few forms, each prepared once, where one form per length filled
// the bounded statement caches (and SQLite's keeps what it first saw).
func PaddedIn[T any](args []any, vals []T) ([]any, string) {
	n := 1
	for n < len(vals) {
		n *= 2
	}
	for i := range n {
		args = append(args, vals[min(i, len(vals)-1)])
	}
	return args, Placeholders(n)
}

// Placeholders is "?,?,...,?" with n marks, for an IN list of n values.
func Placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// IsUniqueViolation reports whether err is a unique-constraint failure in
// either dialect.
func IsUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "SQLSTATE 23505") || strings.Contains(s, "duplicate key value")
}

// IsForeignKeyViolation reports whether err is a foreign-key failure in
// either dialect.
func IsForeignKeyViolation(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "FOREIGN KEY constraint failed") || strings.Contains(s, "SQLSTATE 23503")
}

// Millis converts a time to the stored form (unix milliseconds).
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis converts the stored form back to UTC time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// NullMillis converts a nullable stored time.
func NullMillis(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := FromMillis(v.Int64)
	return &t
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

// DB returns the database the transaction belongs to.
func (tx *Tx) DB() *DB { return tx.db }
