package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// Migration 00010 names each webhook delivery's and log row's event by its
// seq; rows written before it get theirs from the event they name, and a
// log row of a test event (not in the event log) keeps none.
func TestMigrationNamesEventsBySeq(t *testing.T) {
	ctx := context.Background()
	db := migratedTo(t, 9)
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

// Migration 00011 rebuilds SQLite's events table without the UNIQUE on id
// and without AUTOINCREMENT: every event keeps its seq and fields, the
// indexes the dispatcher and the timelines read are back, and a new event
// gets the next seq. On PostgreSQL it changes nothing.
func TestMigrationRebuildsEvents(t *testing.T) {
	ctx := context.Background()
	db := migratedTo(t, 10)
	for _, q := range []string{
		`INSERT INTO events (id, workspace_id, email_id, type, sequence, created_at, data, webhook, dispatched) VALUES ('whd_a', 'ws_1', 'em_1', 'email.sent', 2, 1, '{"a":1}', 1, 1)`,
		`INSERT INTO events (id, workspace_id, email_id, type, sequence, created_at, data, webhook, dispatched) VALUES ('whd_b', 'ws_1', 'em_1', 'email.delivered', 3, 2, '{"b":2}', 1, 0)`,
		`INSERT INTO events (id, workspace_id, email_id, type, sequence, created_at, data, webhook, dispatched) VALUES ('whd_c', 'ws_2', NULL, 'contact.created', 1, 3, '{}', 0, 1)`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	type event struct {
		seq                        int64
		id, ws, typ, data          string
		email                      sql.NullString
		sequence, at, hook, sentTo int64
	}
	read := func() []event {
		rows, err := db.Query(ctx, `SELECT seq, id, workspace_id, email_id, type, sequence, created_at, data, webhook, dispatched FROM events ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []event
		for rows.Next() {
			var e event
			if err := rows.Scan(&e.seq, &e.id, &e.ws, &e.email, &e.typ, &e.sequence, &e.at, &e.data, &e.hook, &e.sentTo); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := read()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	after := read()
	if len(after) != 3 || len(before) != 3 {
		t.Fatalf("events: %d before, %d after; want 3", len(before), len(after))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("event %d: %+v before, %+v after", i, before[i], after[i])
		}
	}
	if _, err := db.Exec(ctx, `INSERT INTO events (id, workspace_id, email_id, type, sequence, created_at, data) VALUES ('whd_d', 'ws_1', 'em_2', 'email.sent', 2, 4, '{}')`); err != nil {
		t.Fatal(err)
	}
	var next int64
	if err := db.QueryRow(ctx, `SELECT seq FROM events WHERE id = 'whd_d'`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if next <= after[2].seq {
		t.Errorf("new event's seq %d, want more than %d", next, after[2].seq)
	}
	if db.Dialect != store.SQLite {
		return
	}
	var ddl string
	if err := db.QueryRow(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT") || strings.Contains(strings.ToUpper(ddl), "UNIQUE") {
		t.Errorf("events is still %s", ddl)
	}
	var idx []string
	rows, err := db.Query(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, n)
	}
	if want := []string{"events_email", "events_undispatched"}; !slices.Equal(idx, want) {
		t.Errorf("indexes on events: %v, want %v", idx, want)
	}
}

// migratedTo opens a test database migrated up to version, below the
// migration a test is about.
func migratedTo(t *testing.T, version int64) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.MigrateTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	return db
}

// Migration 00067 folds the three analytics rollup tables into two: the
// email-wide rows under tag key ”, and a total per day summed from them.
func TestRollupTablesMigrate(t *testing.T) {
	ctx := context.Background()
	db := migratedTo(t, 66)
	for _, q := range []string{
		`INSERT INTO analytics_daily (workspace_id, day, domain, mail_class, template_id, sent, delivered, opens) VALUES ('ws', 20000, 'a.example', 'marketing', '', 3, 2, 1)`,
		`INSERT INTO analytics_daily (workspace_id, day, domain, mail_class, template_id, sent, delivered, opens) VALUES ('ws', 20000, 'b.example', 'transactional', 'tpl', 4, 4, 0)`,
		`INSERT INTO analytics_tags (workspace_id, tag_key, day, tag_value, domain, mail_class, template_id, sent) VALUES ('ws', 'plan', 20000, 'pro', 'a.example', 'marketing', '', 3)`,
		`INSERT INTO analytics_tag_days (workspace_id, tag_key, day, tag_value, sent) VALUES ('ws', 'plan', 20000, 'pro', 3)`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var cells, tagCells int
	if err := db.QueryRow(ctx, `SELECT COUNT(*), COUNT(CASE WHEN tag_key = 'plan' THEN 1 END) FROM analytics_cells WHERE workspace_id = 'ws'`).Scan(&cells, &tagCells); err != nil {
		t.Fatal(err)
	}
	if cells != 3 || tagCells != 1 {
		t.Errorf("analytics_cells: %d rows, %d of tag plan; want 3 and 1", cells, tagCells)
	}
	var sent, delivered, opens, planSent int64
	if err := db.QueryRow(ctx, `SELECT sent, delivered, opens FROM analytics_days WHERE workspace_id = 'ws' AND tag_key = '' AND tag_value = '' AND day = 20000`).Scan(&sent, &delivered, &opens); err != nil {
		t.Fatal(err)
	}
	if sent != 7 || delivered != 6 || opens != 1 {
		t.Errorf("day total sent %d delivered %d opens %d, want 7 6 1", sent, delivered, opens)
	}
	if err := db.QueryRow(ctx, `SELECT sent FROM analytics_days WHERE workspace_id = 'ws' AND tag_key = 'plan' AND tag_value = 'pro' AND day = 20000`).Scan(&planSent); err != nil || planSent != 3 {
		t.Errorf("plan:pro sent %d (%v), want 3", planSent, err)
	}
}

// Migration 00097 keys broadcast_recipients by (broadcast_id, contact_id)
// and drops the id: every recipient keeps its fields, the id it had is
// broadcast_id_contact_id, and the snapshot's one-row-per-address rule and
// the key still refuse a second row. (Read before 00121, which leaves one
// row per address to the contacts' unique address, and 00122.)
func TestMigrationKeysBroadcastRecipients(t *testing.T) {
	ctx := context.Background()
	db := migratedTo(t, 96)
	for _, c := range []string{"ct_1", "ct_2"} {
		if _, err := db.Exec(ctx, `INSERT INTO broadcast_recipients (id, broadcast_id, workspace_id, contact_id, email, first_name, attributes, status, email_id, created_at, updated_at)
			VALUES (?, 'bc_1', 'ws_1', ?, ?, 'Ann', '{"plan":"pro"}', 'sent', ?, 1, 2)`, "bc_1_"+c, c, c+"@example.net", "em_"+c); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.MigrateTo(ctx, 120); err != nil { // 00122 drops workspace_id
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, `SELECT broadcast_id || '_' || contact_id, workspace_id, email, first_name, attributes, status, email_id, created_at, updated_at
		FROM broadcast_recipients ORDER BY contact_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id, ws, email, first, attrs, status, emailID string
		var c, u int64
		if err := rows.Scan(&id, &ws, &email, &first, &attrs, &status, &emailID, &c, &u); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintln(id, ws, email, first, attrs, status, emailID, c, u))
	}
	want := []string{"bc_1_ct_1 ws_1 ct_1@example.net Ann {\"plan\":\"pro\"} sent em_ct_1 1 2\n", "bc_1_ct_2 ws_1 ct_2@example.net Ann {\"plan\":\"pro\"} sent em_ct_2 1 2\n"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("recipients after 00097:\n%q\nwant\n%q", got, want)
	}
	for _, dup := range [][2]string{{"ct_1", "new@example.net"}, {"ct_3", "ct_2@example.net"}} {
		if _, err := db.Exec(ctx, `INSERT INTO broadcast_recipients (broadcast_id, workspace_id, contact_id, email, status, created_at, updated_at)
			VALUES ('bc_1', 'ws_1', ?, ?, 'pending', 1, 1)`, dup[0], dup[1]); err == nil {
			t.Errorf("a second row for %v was taken", dup)
		}
	}
}

// TestMigrateAppliesOneNumberedBelow: a database that has every migration
// but one numbered below its newest (a release merged branches that picked
// their numbers apart) gets the missing one on the next start instead of a
// refusal. Upgrading from the release before 00096 landed hit this.
func TestMigrateAppliesOneNumberedBelow(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	all, err := store.Migrations(db.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	const missing = "00096_broadcast_body_once.sql"
	dialect := goose.DialectSQLite3
	if db.Dialect == store.Postgres {
		dialect = goose.DialectPostgres
	}
	older, err := goose.NewProvider(dialect, db.W, without{all, missing})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := older.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrating a database that lacks %s: %v", missing, err)
	}
	var n int
	if err := db.W.QueryRowContext(ctx, `SELECT COUNT(*) FROM emails WHERE body_source = ''`).Scan(&n); err != nil {
		t.Fatalf("%s was not applied: %v", missing, err)
	}
}

// without is a migration directory with one file left out.
type without struct {
	fs.FS
	name string
}

func (w without) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(w.FS, name)
	return slices.DeleteFunc(es, func(e fs.DirEntry) bool { return e.Name() == w.name }), err
}
