package store_test

import (
	"context"
	"testing"
	"time"

	"mailroom/internal/store"
)

// The locking clauses run in both dialects; on PostgreSQL a second claimer
// skips the row the first holds, and a ForUpdate read waits for it.
func TestLockingClauses(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	for _, id := range []string{"ws_a", "ws_b"} {
		if _, err := db.Exec(ctx, `INSERT INTO workspaces (id, name, owner_email, owner_confirmed, created_at) VALUES (?, ?, ?, ?, ?)`, id, "n", "o@x.io", 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(tx *store.Tx) string {
		t.Helper()
		var id string
		if err := tx.QueryRow(ctx, `SELECT id FROM workspaces ORDER BY id LIMIT 1`+db.SkipLocked()).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	first, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback()
	if got := claim(first); got != "ws_a" {
		t.Fatalf("first claim took %s, want ws_a", got)
	}
	if db.Dialect != store.Postgres {
		// One writer: no second transaction can run beside the first.
		return
	}
	second, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Rollback()
	if got := claim(second); got != "ws_b" {
		t.Fatalf("second claim took %s, want ws_b (ws_a is locked)", got)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	var id string
	err = second.QueryRow(wctx, `SELECT id FROM workspaces WHERE id = ?`+second.ForUpdate(), "ws_a").Scan(&id)
	if err == nil {
		t.Fatal("a ForUpdate read of a row another transaction holds returned at once")
	}
}
