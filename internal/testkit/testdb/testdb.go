// Package testdb gives each test its own database, already migrated (the
// store's migrations and River's): a SQLite file in the test's temp
// directory, or, when MAILROOM_TEST_DATABASE_URL names a PostgreSQL server,
// a database on it that is dropped when the test ends. The same test cases
// thus run on both dialects.
//
// Each test's database is a copy of a template migrated once and kept under
// a name made of its migrations' digest, so a test pays a file copy or a
// CREATE DATABASE ... TEMPLATE instead of every migration (and PostgreSQL
// test processes no longer queue on goose's advisory lock).
package testdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river/rivermigrate"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// URL returns the URL of a new database owned by t, migrated to the latest
// version of the store and of River.
func URL(t testing.TB) string {
	t.Helper()
	if !IsPostgres() {
		tmpl, err := sqliteTemplate()
		if err != nil {
			t.Fatalf("testdb: %v", err)
		}
		path := filepath.Join(t.TempDir(), "mailroom.db")
		if err := copyFile(tmpl, path); err != nil {
			t.Fatalf("testdb: copying the template: %v", err)
		}
		return path
	}
	tmpl, err := postgresTemplate()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return postgresDB(t, "TEMPLATE "+tmpl)
}

// EmptyURL returns the URL of a new, empty database owned by t, for tests
// of the migrations themselves.
func EmptyURL(t testing.TB) string {
	t.Helper()
	if !IsPostgres() {
		return filepath.Join(t.TempDir(), "mailroom.db")
	}
	return postgresDB(t, "")
}

// IsPostgres reports whether tests run against PostgreSQL.
func IsPostgres() bool {
	base := os.Getenv("MAILROOM_TEST_DATABASE_URL")
	return strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://")
}

// Open returns a migrated store on a new database owned by t, closed when
// t ends.
func Open(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// postgresDB creates a database named for t (CREATE DATABASE with opts)
// and drops it when t ends.
func postgresDB(t testing.TB, opts string) string {
	t.Helper()
	admin, err := adminDB()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	name := strings.ToLower(strings.ReplaceAll(ids.New("mailroom_t"), "-", "_"))
	// The default strategy (WAL_LOG since PostgreSQL 15) copied a template
	// twice as fast as FILE_COPY, which checkpoints: docs/performance.md.
	if _, err := admin.Exec(`CREATE DATABASE ` + name + ` ` + opts); err != nil {
		t.Fatalf("testdb: creating database: %v", err)
	}
	t.Cleanup(func() {
		// FORCE: a pool the test forgot to close must not keep it.
		if _, err := admin.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Logf("testdb: dropping %s: %v", name, err)
		}
	})
	return withDatabase(name)
}

var admin struct {
	once sync.Once
	db   *sql.DB
	err  error
}

// adminDB is the process's pool on MAILROOM_TEST_DATABASE_URL's database,
// from which test databases are created and dropped.
func adminDB() (*sql.DB, error) {
	admin.once.Do(func() {
		admin.db, admin.err = sql.Open("pgx", os.Getenv("MAILROOM_TEST_DATABASE_URL"))
	})
	return admin.db, admin.err
}

// withDatabase is MAILROOM_TEST_DATABASE_URL naming database name instead.
func withDatabase(name string) string {
	u, err := url.Parse(os.Getenv("MAILROOM_TEST_DATABASE_URL"))
	if err != nil {
		panic("testdb: MAILROOM_TEST_DATABASE_URL: " + err.Error())
	}
	u.Path = "/" + name
	return u.String()
}

type template struct {
	once sync.Once
	name string
	err  error
}

var sqliteTmpl, postgresTmpl template

// sqliteTemplate is the path of the migrated SQLite template, built once
// in the system's temp directory (by whichever process needs it first).
func sqliteTemplate() (string, error) {
	t := &sqliteTmpl
	t.once.Do(func() {
		digest, err := migrationsDigest(store.SQLite)
		if err != nil {
			t.err = err
			return
		}
		dir := filepath.Join(os.TempDir(), "mailroom-testdb")
		path := filepath.Join(dir, digest+".db")
		t.name = path
		if _, err := os.Stat(path); err == nil {
			return
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.err = err
			return
		}
		build, err := os.MkdirTemp(dir, "build-")
		if err != nil {
			t.err = err
			return
		}
		defer os.RemoveAll(build)
		db := filepath.Join(build, "mailroom.db")
		if err := migrate(db); err != nil {
			t.err = fmt.Errorf("migrating the SQLite template: %w", err)
			return
		}
		// Closing checkpointed the WAL: the file alone is the database.
		t.err = os.Rename(db, path)
	})
	return t.name, t.err
}

// postgresTemplate is the name of the migrated PostgreSQL template
// database, built once per server and digest under an advisory lock so that
// test processes running at once build it once.
func postgresTemplate() (string, error) {
	t := &postgresTmpl
	t.once.Do(func() {
		digest, err := migrationsDigest(store.Postgres)
		if err != nil {
			t.err = err
			return
		}
		t.name = "mailroom_tmpl_" + digest
		t.err = buildPostgresTemplate(t.name)
	})
	return t.name, t.err
}

func buildPostgresTemplate(name string) error {
	ctx := context.Background()
	db, err := adminDB()
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx) // the advisory lock belongs to one session
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, name); err != nil {
		return err
	}
	defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtext($1))`, name)
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	// Built under another name and renamed when complete: a build that
	// died half way is never taken for a template.
	build := name + "_build"
	if _, err := conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+build+` WITH (FORCE)`); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+build); err != nil {
		return err
	}
	if err := migrate(withDatabase(build)); err != nil {
		return fmt.Errorf("migrating the PostgreSQL template: %w", err)
	}
	_, err = conn.ExecContext(ctx, `ALTER DATABASE `+build+` RENAME TO `+name)
	return err
}

// migrate applies the store's and River's migrations to the database at
// url, as app start does, and closes it.
func migrate(url string) error {
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return err
	}
	m, err := rivermigrate.New(db.QueueDriver(), nil)
	if err == nil {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// migrationsDigest names what a template holds: the dialect's migrations
// and River's, so a changed migration builds a new template.
func migrationsDigest(d store.Dialect) (string, error) {
	h := sha256.New()
	fsys, err := store.Migrations(d)
	if err != nil {
		return "", err
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return "", err
		}
		write(h, e.Name(), string(b))
	}
	// Listing River's migrations reads no database: a handle without a pool will do.
	m, err := rivermigrate.New((&store.DB{Dialect: d}).QueueDriver(), nil)
	if err != nil {
		return "", err
	}
	for _, mig := range m.AllVersions() {
		write(h, fmt.Sprint(mig.Version), mig.SQLUp)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func write(h hash.Hash, parts ...string) {
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// QueryPlan is SQLite's EXPLAIN QUERY PLAN of query, one step a line.
func QueryPlan(t testing.TB, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}
