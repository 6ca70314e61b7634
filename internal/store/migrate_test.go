package store_test

import (
	"context"
	"database/sql"
	"testing"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// Migration 00010 names each webhook delivery's and log row's event by its
// seq; rows written before it get theirs from the event they name, and a
// log row of a test event (not in the event log) keeps none.
func TestMigrationNamesEventsBySeq(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.MigrateTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO events (id, workspace_id, email_id, type, sequence, created_at, data) VALUES ('whd_a', 'ws_1', 'em_1', 'email.sent', 2, 1, '{}')`,
		`INSERT INTO events (id, workspace_id, email_id, type, sequence, created_at, data) VALUES ('whd_b', 'ws_1', 'em_1', 'email.delivered', 3, 2, '{}')`,
		`INSERT INTO webhook_deliveries (webhook_id, workspace_id, event_id, event_at, due_at, next_attempt_at) VALUES ('wh_1', 'ws_1', 'whd_b', 2, 2, 2)`,
		`INSERT INTO webhook_attempts (id, workspace_id, webhook_id, event_id, event, attempt, created_at) VALUES ('wha_1', 'ws_1', 'wh_1', 'whd_b', 'email.delivered', 1, 3)`,
		`INSERT INTO webhook_attempts (id, workspace_id, webhook_id, event_id, event, kind, attempt, payload, created_at) VALUES ('wha_2', 'ws_1', 'wh_1', 'whd_test', 'email.sent', 'test', 1, '{}', 4)`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if db.Dialect == store.Postgres {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'events' AND indexdef LIKE '%(id)%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("events still has %d index(es) on id", n)
		}
	}
	var want int64
	if err := db.QueryRow(ctx, `SELECT seq FROM events WHERE id = 'whd_b'`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	for q, w := range map[string]sql.NullInt64{
		`SELECT event_seq FROM webhook_deliveries WHERE event_id = 'whd_b'`: {Int64: want, Valid: true},
		`SELECT event_seq FROM webhook_attempts WHERE id = 'wha_1'`:         {Int64: want, Valid: true},
		`SELECT event_seq FROM webhook_attempts WHERE id = 'wha_2'`:         {},
	} {
		var got sql.NullInt64
		if err := db.QueryRow(ctx, q).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("%s: %v, want %v", q, got, w)
		}
	}
}
