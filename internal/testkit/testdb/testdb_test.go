package testdb_test

import (
	"context"
	"testing"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// Each test's database is a migrated copy, store and River tables both,
// and copies share nothing.
func TestCopiesAreMigratedAndSeparate(t *testing.T) {
	ctx := context.Background()
	a, b := testdb.Open(t), testdb.Open(t)
	for _, table := range []string{"workspaces", "emails", "river_job"} {
		var n int
		if err := a.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
	}
	if _, err := a.Exec(ctx, `INSERT INTO workspaces (id, name, owner_email, owner_confirmed, created_at) VALUES ('ws_1', 'n', 'o@x.io', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(ctx, `SELECT count(*) FROM workspaces`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the other copy has %d workspaces (%v), want 0", n, err)
	}
	// Migrating again finds nothing to do.
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
}

// An empty database has no tables until migrated.
func TestEmptyURL(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM workspaces`).Scan(&n); err == nil {
		t.Fatal("an empty database has a workspaces table")
	}
}

// A PostgreSQL test database is dropped when its test ends.
func TestPostgresDatabaseDropped(t *testing.T) {
	if !testdb.IsPostgres() {
		t.Skip("PostgreSQL only")
	}
	var url string
	t.Run("owner", func(t *testing.T) { url = testdb.URL(t) })
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err == nil {
		db.Close()
		t.Fatalf("%s still answers after its test ended", url)
	}
}
