package store_test

import (
	"context"
	"errors"
	"testing"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

func open(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// The same cases run on SQLite and, with MAILROOM_TEST_DATABASE_URL, on PostgreSQL.
func TestStoreConformance(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	if want := testdb.IsPostgres(); (db.Dialect == store.Postgres) != want {
		t.Fatalf("dialect %v", db.Dialect)
	}
	// Migrations are idempotent.
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	insert := func(tx *store.Tx, id string) error {
		_, err := tx.Exec(ctx, `INSERT INTO workspaces (id, name, owner_email, owner_confirmed, created_at) VALUES (?, ?, ?, ?, ?)`, id, "n", "o@x.io", 1, 1)
		return err
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return insert(tx, "ws_1") }); err != nil {
		t.Fatal(err)
	}
	// A unique violation is recognised in both dialects.
	err := db.InTx(ctx, func(tx *store.Tx) error { return insert(tx, "ws_1") })
	if !store.IsUniqueViolation(err) {
		t.Fatalf("want unique violation, got %v", err)
	}
	// A failing transaction leaves nothing behind.
	boom := errors.New("boom")
	err = db.InTx(ctx, func(tx *store.Tx) error {
		if err := insert(tx, "ws_2"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM workspaces WHERE id IN (?, ?)`, "ws_1", "ws_2").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d %v", n, err)
	}
	// After-commit hooks run only after a commit.
	ran := false
	db.InTx(ctx, func(tx *store.Tx) error { tx.AfterCommit(func() { ran = true }); return boom })
	if ran {
		t.Fatal("after-commit ran on rollback")
	}
	db.InTx(ctx, func(tx *store.Tx) error { tx.AfterCommit(func() { ran = true }); return nil })
	if !ran {
		t.Fatal("after-commit did not run")
	}
	// Jobs without a queue installed refuse to commit rather than drop silently.
	err = db.InTx(ctx, func(tx *store.Tx) error { tx.AddJob(struct{}{}); return insert(tx, "ws_3") })
	if err == nil {
		t.Fatal("committed a job with no queue")
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM workspaces WHERE id = ?`, "ws_3").Scan(&n); err != nil || n != 0 {
		t.Fatalf("row committed without its job: %d %v", n, err)
	}
}

func TestRebindSkipsQuotedMarks(t *testing.T) {
	db := &store.DB{Dialect: store.Postgres}
	got := db.Rebind(`SELECT '?' , a FROM t WHERE b = ? AND c = ?`)
	if got != `SELECT '?' , a FROM t WHERE b = $1 AND c = $2` {
		t.Fatal(got)
	}
}
