package sending

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// Both email listings, the workspace's and a mail:send key's own, walk the
// one listing index in order, with no sort (SQLite's plan says so;
// migration 00012 dropped the index the key's own listing had).
func TestListQueryWalksTheListingIndex(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Enough rows, in two workspaces and under two keys, that the
	// planner's statistics do not make a table scan look cheap.
	for i := range 200 {
		ws, key := "ws_a", "key_1"
		if i%2 == 1 {
			ws = "ws_b"
		}
		if i%3 == 0 {
			key = "key_2"
		}
		if _, err := db.Exec(ctx, `INSERT INTO emails (id, workspace_id, api_key_id, status, from_addr, to_addrs, subject, created_at, updated_at)
			VALUES (?, ?, ?, 'queued', 'a@b.c', '[]', 's', ?, ?)`, fmt.Sprintf("em_%04d", i), ws, key, i, i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    Caller
		pos  *Position
	}{
		{"workspace", Caller{WorkspaceID: "ws_a", KeyID: "key_1"}, nil},
		{"workspace, next page", Caller{WorkspaceID: "ws_a", KeyID: "key_1"}, &Position{At: 100, ID: "em_x"}},
		{"own", Caller{WorkspaceID: "ws_a", KeyID: "key_1", OwnOnly: true}, nil},
		{"own, next page", Caller{WorkspaceID: "ws_a", KeyID: "key_1", OwnOnly: true}, &Position{At: 100, ID: "em_x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, args := listQuery(tc.c, 25, tc.pos)
			all := testdb.QueryPlan(t, db.R, q, args...)
			if !strings.Contains(all, "SEARCH e USING INDEX emails_workspace_created") || strings.Contains(all, "TEMP B-TREE") {
				t.Errorf("plan:\n%s", all)
			}
		})
	}
}
