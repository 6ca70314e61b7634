// Package testdb gives each test its own empty database: a SQLite file in
// the test's temp directory, or, when MAILROOM_TEST_DATABASE_URL names a
// PostgreSQL server, a fresh schema on it (selected through search_path) that
// is dropped when the test ends. The same test cases thus run on both dialects.
package testdb

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// URL returns a database URL for a new, empty database owned by t.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("MAILROOM_TEST_DATABASE_URL")
	if base == "" || !(strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://")) {
		return filepath.Join(t.TempDir(), "mailroom.db")
	}
	schema := strings.ReplaceAll(ids.New("t"), "-", "_")
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		t.Fatalf("testdb: creating schema: %v", err)
	}
	t.Cleanup(func() {
		admin.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
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
	ctx := context.Background()
	db, err := store.Open(ctx, URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}
