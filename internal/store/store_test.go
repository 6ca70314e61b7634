package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

func open(t *testing.T) *store.DB { return testdb.Open(t) }

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

// Readers map the file; the writer does not (docs/decisions.md, "Readers
// map the database").
func TestSQLiteReadersMapTheFile(t *testing.T) {
	db := open(t)
	if db.Dialect != store.SQLite {
		t.Skip("SQLite only")
	}
	ctx := context.Background()
	var r, w int64
	if err := db.R.QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&r); err != nil {
		t.Fatal(err)
	}
	if err := db.W.QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&w); err != nil {
		t.Fatal(err)
	}
	if r != 256<<20 || w != 0 {
		t.Fatalf("mmap_size: readers %d, writer %d; want %d and 0", r, w, 256<<20)
	}
}

func TestRebindSkipsQuotedMarks(t *testing.T) {
	db := &store.DB{Dialect: store.Postgres}
	got := db.Rebind(`SELECT '?' , a FROM t WHERE b = ? AND c = ?`)
	if got != `SELECT '?' , a FROM t WHERE b = $1 AND c = $2` {
		t.Fatal(got)
	}
}

// lateFlag is a value settled just before the deferred rows are written.
type lateFlag struct{ v int64 }

func (f *lateFlag) Value() (driver.Value, error) { return f.v, nil }

// Deferred inserts write every row with its exact values, NULLs and values
// settled in BeforeFlush included, for any number of rows (one statement on
// PostgreSQL, VALUES lists on SQLite).
func TestDeferInsert(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	cols := []string{"id", "workspace_id", "email_id", "type", "sequence", "created_at", "data", "webhook", "dispatched"}
	for _, n := range []int{1, 2, 7, 70} {
		flag := &lateFlag{}
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := range n {
				var email any
				if i%2 == 0 {
					email = fmt.Sprintf("em_%d", i)
				}
				tx.DeferInsert("events", cols, fmt.Sprintf("whd_%d_%d", n, i), "ws_d", email, "email.sent", i, int64(1_700_000_000_000+i), "{}", 1, flag)
			}
			st := tx.Local("k", func() any { return new(int) }).(*int)
			*st++
			if again := tx.Local("k", func() any { return new(int) }).(*int); again != st {
				t.Fatal("Local made a second value for one key")
			}
			tx.BeforeFlush(func(ctx context.Context, tx *store.Tx) error { flag.v = int64(n); return nil })
			return nil
		})
		if err != nil {
			t.Fatalf("%d rows: %v", n, err)
		}
		// In seq order: the rows go in in the order they were deferred (the
		// event log's order), on PostgreSQL too, where one statement unnests
		// them from arrays.
		rows, err := db.Query(ctx, `SELECT id, email_id, sequence, created_at, dispatched FROM events WHERE id LIKE ? ORDER BY seq`, fmt.Sprintf("whd_%d_%%", n))
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for rows.Next() {
			var id string
			var email sql.NullString
			var seq, disp int
			var at int64
			if err := rows.Scan(&id, &email, &seq, &at, &disp); err != nil {
				t.Fatal(err)
			}
			if id != fmt.Sprintf("whd_%d_%d", n, i) || seq != i || at != int64(1_700_000_000_000+i) || disp != n || email.Valid != (i%2 == 0) {
				t.Fatalf("%d rows: row %d = %s %v %d %d %d", n, i, id, email, seq, at, disp)
			}
			i++
		}
		rows.Close()
		if i != n {
			t.Fatalf("%d rows written, want %d", i, n)
		}
	}
}

// Rows deferred for several tables in one transaction all land (one
// statement with WITH clauses on PostgreSQL).
func TestDeferInsertSeveralTables(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	err := db.InTx(ctx, func(tx *store.Tx) error {
		for i := range 3 {
			tx.DeferInsert("workspaces", []string{"id", "name", "owner_email", "owner_confirmed", "created_at"}, fmt.Sprintf("ws_m%d", i), "n", "o@x.io", 1, int64(i))
		}
		tx.DeferInsert("events", []string{"id", "workspace_id", "type", "sequence", "created_at", "data"}, "whd_m", "ws_m0", "domain.verified", 0, int64(1), "{}")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var ws, ev int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM workspaces WHERE id LIKE 'ws_m%'), (SELECT count(*) FROM events WHERE id = 'whd_m')`).Scan(&ws, &ev); err != nil {
		t.Fatal(err)
	}
	if ws != 3 || ev != 1 {
		t.Fatalf("workspaces %d events %d", ws, ev)
	}
}

// Deferred upserts end each of their statements with the ON CONFLICT
// clause: new keys are inserted, existing ones updated, in multi-row
// statements beside plain deferred inserts (one statement on PostgreSQL).
func TestDeferUpsert(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	cols := []string{"id", "name", "owner_email", "owner_confirmed", "created_at"}
	const conflict = ` ON CONFLICT (id) DO UPDATE SET name = workspaces.name || excluded.name, created_at = workspaces.created_at + excluded.created_at`
	for round, name := range []string{"a", "b"} {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := range 70 - 69*round { // 70 rows, then one
				tx.DeferUpsert("workspaces", cols, conflict, fmt.Sprintf("ws_u%d", i), name, "o@x.io", 1, int64(i+1))
			}
			tx.DeferInsert("events", []string{"id", "workspace_id", "type", "sequence", "created_at", "data"}, fmt.Sprintf("whd_u%d", round), "ws_u0", "domain.verified", 0, int64(1), "{}")
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	var first, last string
	var at int64
	var n, ev int
	if err := db.QueryRow(ctx, `SELECT (SELECT name FROM workspaces WHERE id = 'ws_u0'), (SELECT created_at FROM workspaces WHERE id = 'ws_u0'),
		(SELECT name FROM workspaces WHERE id = 'ws_u69'), (SELECT count(*) FROM workspaces WHERE id LIKE 'ws_u%'), (SELECT count(*) FROM events WHERE id LIKE 'whd_u%')`).Scan(&first, &at, &last, &n, &ev); err != nil {
		t.Fatal(err)
	}
	if first != "ab" || at != 2 || last != "a" || n != 70 || ev != 2 {
		t.Fatalf("ws_u0 %q at %d, ws_u69 %q, %d workspaces, %d events; want ab 2 a 70 2", first, at, last, n, ev)
	}
}

// A writer that never pauses still reuses its WAL: FinishWAL between
// transactions lets the next one start the log over, instead of appending to
// it for as long as the load lasts (a bench run grew it to 660 MB, and
// appending cost more per commit than overwriting).
func TestWALStartsOverUnderContinuousWrites(t *testing.T) {
	if testdb.IsPostgres() {
		t.Skip("SQLite's WAL")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("n", 2000)
	commits := 0
	for start := time.Now(); time.Since(start) < 3*time.Second; commits++ {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO workspaces (id, name, owner_email, owner_confirmed, created_at) VALUES (?, ?, ?, ?, ?)`,
				fmt.Sprintf("ws_%d", commits), name, "o@x.io", 1, 1)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		db.FinishWAL(ctx)
	}
	st, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// Every commit here writes about three frames (pages with a 24-byte
	// header each; 3.2 measured at 4 KiB pages without FinishWAL): a log that
	// never started over holds them all. The checkpointer's passes come every
	// 200 ms, so a log that starts over after each holds a fifteenth of them;
	// the file keeps its high-water mark, so half leaves room for a pass that
	// a loaded machine (the rest of the suite runs beside) delayed.
	appended := int64(commits) * 3 * (store.NewPageSize + 24)
	t.Logf("%d commits, WAL %d bytes (%d if never started over)", commits, st.Size(), appended)
	if st.Size() > appended/2 {
		t.Fatalf("WAL is %d bytes after %d commits: it did not start over", st.Size(), commits)
	}
}

func TestPaddedIn(t *testing.T) {
	for _, tc := range []struct {
		vals []string
		want []any
	}{
		{[]string{"a"}, []any{"x", "a"}},
		{[]string{"a", "b"}, []any{"x", "a", "b"}},
		{[]string{"a", "b", "c"}, []any{"x", "a", "b", "c", "c"}},
		{[]string{"a", "b", "c", "d", "e"}, []any{"x", "a", "b", "c", "d", "e", "e", "e", "e"}},
	} {
		args, in := store.PaddedIn([]any{"x"}, tc.vals)
		if fmt.Sprint(args) != fmt.Sprint(tc.want) || in != store.Placeholders(len(tc.want)-1) {
			t.Errorf("PaddedIn(%v) = %v, %q", tc.vals, args, in)
		}
	}
}

// A new SQLite database gets store.NewPageSize; one created at SQLite's
// default 4 KB keeps its pages and still opens, migrates, reads and writes
// (docs/decisions.md, "New SQLite databases use 8 KB pages").
func TestSQLitePageSize(t *testing.T) {
	if testdb.IsPostgres() {
		t.Skip("SQLite's page size")
	}
	ctx := context.Background()
	uses := 0
	use := func(path string, want int) {
		t.Helper()
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		uses++
		id := fmt.Sprintf("ws_%d", uses)
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO workspaces (id, name, owner_email, owner_confirmed, created_at) VALUES (?, ?, ?, ?, ?)`, id, strings.Repeat("n", 3*want), "o@x.io", 1, 1)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var name, mode string
		if err := db.QueryRow(ctx, `SELECT name FROM workspaces WHERE id = ?`, id).Scan(&name); err != nil || len(name) != 3*want {
			t.Fatalf("read back %d bytes, %v", len(name), err)
		}
		for _, c := range []*sql.DB{db.W, db.R} {
			var ps int
			if err := c.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&ps); err != nil || ps != want {
				t.Fatalf("page_size %d (%v), want %d", ps, err, want)
			}
		}
		if err := db.W.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("journal_mode %q (%v)", mode, err)
		}
	}
	dir := t.TempDir()
	use(filepath.Join(dir, "new.db"), store.NewPageSize)

	old := filepath.Join(dir, "old.db")
	raw, err := sql.Open("sqlite", "file:"+old)
	if err != nil {
		t.Fatal(err)
	}
	c, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA page_size = 4096`, `PRAGMA journal_mode = WAL`, `CREATE TABLE before (x)`, `INSERT INTO before VALUES (1)`} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	c.Close()
	raw.Close()
	use(old, 4096)
	use(old, 4096) // and again, migrated
	if store.NewPageSize == 4096 {
		t.Fatal("the test cannot tell a new database from an old one")
	}
}
