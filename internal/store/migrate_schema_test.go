package store_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3/lock"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// Each dialect sees the common migrations with its own files standing in
// for those of the same name, and both number the same versions.
func TestMigrationFilesMerge(t *testing.T) {
	names := map[store.Dialect][]string{}
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		fsys, err := store.Migrations(d)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := fs.ReadDir(fsys, ".")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			names[d] = append(names[d], e.Name())
		}
		// 00001 differs by dialect: the merged file is the dialect's own.
		got, err := fs.ReadFile(fsys, "00001_platform.sql")
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("migrations", d.String(), "00001_platform.sql"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%v: 00001_platform.sql is not the dialect's own file", d)
		}
		// 00002 is common.
		if _, err := fs.ReadFile(fsys, "00002_sending.sql"); err != nil {
			t.Errorf("%v: common migration missing: %v", d, err)
		}
	}
	if !slices.Equal(names[store.SQLite], names[store.Postgres]) {
		t.Fatalf("migrations differ:\nsqlite   %v\npostgres %v", names[store.SQLite], names[store.Postgres])
	}
	if !slices.IsSorted(names[store.SQLite]) || len(names[store.SQLite]) < 12 {
		t.Fatalf("migrations %v", names[store.SQLite])
	}
	// A dialect file identical to its twin belongs in common.
	for _, n := range names[store.SQLite] {
		a, errA := os.ReadFile(filepath.Join("migrations", "sqlite", n))
		b, errB := os.ReadFile(filepath.Join("migrations", "postgres", n))
		if errA == nil && errB == nil && string(a) == string(b) {
			t.Errorf("%s is the same in both dialects: move it to migrations/common", n)
		}
	}
}

// After every migration both dialects have the same tables with the same
// column names. It needs both databases, so it runs with
// MAILROOM_TEST_DATABASE_URL (migrating a SQLite file beside it).
func TestMigratedSchemasMatch(t *testing.T) {
	if !testdb.IsPostgres() {
		t.Skip("needs MAILROOM_TEST_DATABASE_URL: compares a PostgreSQL schema with SQLite's")
	}
	ctx := context.Background()
	migrate := func(url string) *store.DB {
		db, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return db
	}
	lite := migrate(filepath.Join(t.TempDir(), "schema.db"))
	pg := migrate(testdb.EmptyURL(t))

	// Ordinary tables only: an FTS5 index (a virtual table and its shadow
	// tables) is SQLite's form of what PostgreSQL holds as an index, and a
	// generated column (messages.search_vector, the indexed tsvector) is
	// part of PostgreSQL's form of it.
	litecols := schema(t, lite, `SELECT l.name, p.name FROM pragma_table_list l, pragma_table_info(l.name) p
		WHERE l.schema = 'main' AND l.type = 'table' AND l.name NOT LIKE 'sqlite_%'`)
	pgcols := schema(t, pg, `SELECT c.table_name, c.column_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.is_generated = 'NEVER'`)
	for table, cols := range litecols {
		if pgc, ok := pgcols[table]; !ok {
			t.Errorf("table %s only on SQLite", table)
		} else if !slices.Equal(cols, pgc) {
			t.Errorf("table %s columns differ:\nsqlite   %v\npostgres %v", table, cols, pgc)
		}
	}
	for table := range pgcols {
		if _, ok := litecols[table]; !ok {
			t.Errorf("table %s only on PostgreSQL", table)
		}
	}
	if len(litecols) < 10 {
		t.Fatalf("only %d tables after migrating", len(litecols))
	}
}

// schema reads (table, column) rows into sorted column names per table.
func schema(t *testing.T, db *store.DB, q string) map[string][]string {
	t.Helper()
	rows, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		m[strings.ToLower(table)] = append(m[strings.ToLower(table)], strings.ToLower(col))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, cols := range m {
		slices.Sort(cols)
	}
	return m
}

// A migrated database (a test's template copy, a restarting node) migrates
// again without queueing on the lock that nodes migrating at once take:
// goose's Up looks for pending migrations before it locks, and its lock is
// probed every 5 s.
func TestMigrateNothingPendingTakesNoLock(t *testing.T) {
	if !testdb.IsPostgres() {
		t.Skip("the migration lock is PostgreSQL's")
	}
	db := open(t)
	ctx := context.Background()
	conn, err := db.W.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lock.DefaultLockID); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, lock.DefaultLockID)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := db.Migrate(wctx); err != nil {
		t.Fatalf("migrating a migrated database while another session holds the lock: %v", err)
	}
}
