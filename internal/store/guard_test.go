package store_test

import (
	"context"
	"errors"
	"testing"

	"mailroom/internal/store"
)

// A guard's read rides on the statement that writes the deferred rows: when
// its veto holds nothing is written (not even rows of a transaction that
// had begun), and Row sees what the read found either way; when it does not
// hold the rows go in.
func TestGuardKeepsRowsOut(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	if db.Dialect != store.Postgres {
		t.Skip("guards are PostgreSQL's (SQLite reads inside its one writer's transaction)")
	}
	if _, err := db.Exec(ctx, `INSERT INTO suppressions (id, workspace_id, email, reason, created_at) VALUES ('sup_1', 'ws_a', 'x@y.test', 'manual', 1)`); err != nil {
		t.Fatal(err)
	}
	workspaceRows := func() int {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM workspaces WHERE id LIKE 'ws_guard%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	cols := []string{"id", "name", "owner_email", "owner_confirmed", "created_at"}
	for _, tc := range []struct {
		name   string
		email  string
		begun  bool // a statement before the flush begins the transaction
		vetoed bool
	}{
		{"nothing found", "z@y.test", false, false},
		{"a suppression found", "x@y.test", false, true},
		{"a suppression found in a begun transaction", "x@y.test", true, true},
		{"nothing found in a begun transaction", "z@y.test", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, direct := workspaceRows(), db.DirectRuns()
			var found []string
			err := db.InTx(ctx, func(tx *store.Tx) error {
				if tc.begun {
					if _, err := tx.Exec(ctx, `UPDATE suppressions SET reason = reason WHERE id = 'nothing'`); err != nil {
						return err
					}
				}
				id := "ws_guard_" + tc.name
				tx.DeferInsert("workspaces", cols, id, "n", "o@x.test", 1, 1)
				tx.DeferInsert("workspaces", cols, id+"_2", "n", "o@x.test", 1, 1)
				// An upsert's ON CONFLICT goes after the guard's WHERE.
				tx.DeferUpsert("workspaces", cols, " ON CONFLICT (id) DO UPDATE SET name = excluded.name", id+"_3", "n", "o@x.test", 1, 1)
				tx.SetGuard(&store.Guard{
					Query:    `SELECT 0, workspace_id, email, reason FROM suppressions WHERE email IN (?)`,
					Args:     []any{tc.email},
					Veto:     `EXISTS (SELECT 1 FROM g WHERE g.kind = 0 AND g.b = ANY(?::text[]))`,
					VetoArgs: []any{[]string{tc.email}},
					Row:      func(_ int, ws, email, reason string) { found = append(found, ws+"/"+email+"/"+reason) },
				})
				return nil
			})
			if got := errors.Is(err, store.ErrVetoed); got != tc.vetoed || (err != nil && !got) {
				t.Fatalf("err %v, want vetoed %v", err, tc.vetoed)
			}
			want := before + 3
			if tc.vetoed {
				want = before
				if len(found) != 1 || found[0] != "ws_a/x@y.test/manual" {
					t.Errorf("Row saw %v", found)
				}
			}
			if n := workspaceRows(); n != want {
				t.Errorf("%d rows after the commit, want %d", n, want)
			}
			// Unless a transaction had begun, the statement is the whole
			// commit and runs on the direct path (pgdirect.go).
			if ran := db.DirectRuns() - direct; ran != map[bool]uint64{false: 1, true: 0}[tc.begun] {
				t.Errorf("%d statements on the direct path, want %d", ran, map[bool]uint64{false: 1, true: 0}[tc.begun])
			}
		})
	}
}
