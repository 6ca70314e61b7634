package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

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

// readerMmapBytes is how much of the database file each reader maps.
const readerMmapBytes = 256 << 20

func openSQLite(ctx context.Context, path string) (*DB, error) {
	path = SQLitePath(path)
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating database directory: %w", err)
		}
	}
	if err := initSQLite(ctx, path); err != nil {
		return nil, err
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
	// Readers map the file: every commit (and a busy node commits all the
	// time) empties each connection's page cache, so without the map each
	// read copied its pages in again with a syscall apiece. Mapped, they come
	// from the kernel's cache. The writer keeps its own cache (mmap only
	// serves reads). See docs/decisions.md, "Readers map the database".
	r, err := sql.Open("sqlite", "file:"+path+"?"+pragmas+"&_pragma=query_only(1)&_pragma=mmap_size("+strconv.Itoa(readerMmapBytes)+")")
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

// newPageSize is the page size a new SQLite database is created with. A
// received message's raw MIME (about 160 KB) is a chain of overflow pages,
// each written to the WAL and again at checkpoint with a syscall apiece: at
// 8 KB they are half as many as at SQLite's default 4 KB. 16 KB cut more
// but made every small write (a broadcast's rows) copy more: 7% more CPU
// per recipient, measured in turn. A database keeps the page size it was
// created with. See docs/decisions.md, "New SQLite databases use 8 KB pages".
const newPageSize = 8192

// initSQLite gives a new (absent or empty) database its page size. The DSN
// cannot: the driver runs its _pragma list sorted by name, so
// journal_mode(WAL) comes before page_size and, by writing the first page,
// fixes the size before page_size is read.
func initSQLite(ctx context.Context, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return nil
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("creating SQLite database %s: %w", path, err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA page_size = "+strconv.Itoa(newPageSize)); err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, "PRAGMA journal_mode = WAL")
	return err
}
