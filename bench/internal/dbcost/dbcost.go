// Package dbcost measures what a piece of work costs the database, so a
// benchmark can print it per item: rows added per table, bytes on disk
// (SQLite: the file and its WAL; PostgreSQL: the tables with their indexes
// and TOAST), and on PostgreSQL the tuples inserted and updated, the
// commits and the WAL written. Take a Baseline before the work, Settle
// after it, Compact, and Report the difference.
package dbcost

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"mailroom/internal/store"
)

// Probe reads a database's sizes and counters.
type Probe struct {
	db   *store.DB
	file string // SQLite's database file; "" on PostgreSQL
}

// New returns a probe of db; file is the SQLite database's path (ignored
// on PostgreSQL).
func New(db *store.DB, file string) *Probe {
	if db.Dialect == store.Postgres {
		file = ""
	}
	return &Probe{db: db, file: file}
}

// Snapshot is the database at one moment.
type Snapshot struct {
	Rows  map[string]int64 // count(*) per table
	Bytes int64            // SQLite: file + WAL; PostgreSQL: sum of pg_total_relation_size
	// Sizes are the bytes of each table with its indexes (SQLite: its
	// pages, from dbstat; PostgreSQL: pg_total_relation_size), which the
	// report breaks Bytes down by.
	Sizes map[string]int64
	// PostgreSQL only: pg_stat_user_tables n_tup_ins and n_tup_upd (HOT
	// included) per table, this database's committed transactions (reads
	// too), and the server's WAL position (the whole cluster's: other
	// databases' writes count too).
	Ins, Upd     map[string]int64
	Commits, WAL int64
}

// Take reads a snapshot, in one read-only transaction (on PostgreSQL one
// commit; each statement alone would be one more).
func (p *Probe) Take(ctx context.Context) (Snapshot, error) {
	s := Snapshot{Rows: map[string]int64{}, Ins: map[string]int64{}, Upd: map[string]int64{}, Sizes: map[string]int64{}}
	tx, err := p.db.R.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s, err
	}
	defer tx.Rollback()
	list := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	if p.file == "" {
		list = `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`
	}
	var tables []string
	if err := each(tx.QueryContext(ctx, list))(func(r *sql.Rows) error {
		var t string
		tables = append(tables, t)
		return r.Scan(&tables[len(tables)-1])
	}); err != nil {
		return s, err
	}
	for _, t := range tables {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM "`+t+`"`).Scan(&n); err != nil {
			return s, fmt.Errorf("counting %s: %w", t, err)
		}
		s.Rows[t] = n
	}
	if p.file != "" {
		s.Bytes = fileSize(p.file) + fileSize(p.file+"-wal")
		if err := each(tx.QueryContext(ctx, `SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat d JOIN sqlite_master m ON m.name = d.name GROUP BY m.tbl_name`))(func(r *sql.Rows) error {
			var t string
			var size int64
			err := r.Scan(&t, &size)
			s.Sizes[t] = size
			return err
		}); err != nil {
			return s, fmt.Errorf("dbstat: %w", err)
		}
		return s, tx.Commit()
	}
	if err := each(tx.QueryContext(ctx, `SELECT relname, n_tup_ins, n_tup_upd, pg_total_relation_size(relid)
		FROM pg_stat_user_tables WHERE schemaname = current_schema()`))(func(r *sql.Rows) error {
		var t string
		var ins, upd, size int64
		err := r.Scan(&t, &ins, &upd, &size)
		s.Ins[t], s.Upd[t], s.Bytes, s.Sizes[t] = ins, upd, s.Bytes+size, size
		return err
	}); err != nil {
		return s, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
		pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&s.Commits, &s.WAL); err != nil {
		return s, err
	}
	return s, tx.Commit()
}

// each calls f for each row of a query's result.
func each(rows *sql.Rows, err error) func(f func(*sql.Rows) error) error {
	return func(f func(*sql.Rows) error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := f(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

// Settle takes snapshots a second apart until two agree on the rows and
// on PostgreSQL's inserted tuples, or max has passed: use it before the
// work too, and after it, whose last outcomes and events are committed a
// little after its mail arrives. On PostgreSQL it then waits 11 s more
// and reads again: an idle backend publishes its counters up to 10 s
// after its last commit (PGSTAT_IDLE_INTERVAL). Updates and transactions
// never rest (heartbeats, River's leader), so they are not waited on.
func (p *Probe) Settle(ctx context.Context, max time.Duration) (Snapshot, error) {
	prev, err := p.Take(ctx)
	deadline := time.Now().Add(max)
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		var s Snapshot
		if s, err = p.Take(ctx); err != nil {
			break
		}
		if maps.Equal(s.Rows, prev.Rows) && maps.Equal(s.Ins, prev.Ins) {
			break
		}
		prev = s
	}
	if err != nil || p.file != "" {
		return prev, err
	}
	time.Sleep(11 * time.Second)
	return p.Take(ctx)
}

// Baseline is the snapshot to take before the work: settled, then
// compacted, so that the bytes after the work's Compact compare with a
// database compacted alike (an unemptied WAL of the setup would otherwise
// hide the work's growth).
func (p *Probe) Baseline(ctx context.Context) (Snapshot, error) {
	if _, err := p.Settle(ctx, 15*time.Second); err != nil {
		return Snapshot{}, err
	}
	size, err := p.Compact(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	s, err := p.Settle(ctx, 15*time.Second)
	s.Bytes = size
	return s, err
}

// Compact gives back what the database can without rewriting tables
// (SQLite: PRAGMA wal_checkpoint(TRUNCATE), the WAL copied in and emptied;
// PostgreSQL: VACUUM of this schema's tables, dead tuples made reusable)
// and returns the bytes after it.
func (p *Probe) Compact(ctx context.Context) (int64, error) {
	if p.file != "" {
		if _, err := p.db.W.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return 0, err
		}
		return fileSize(p.file) + fileSize(p.file+"-wal"), nil
	}
	tables, err := p.db.Column(ctx, `SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return 0, err
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.(string)
	}
	if _, err := p.db.W.ExecContext(ctx, `VACUUM `+strings.Join(names, ", ")); err != nil {
		return 0, err
	}
	var size int64
	err = p.db.R.QueryRowContext(ctx, `SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::bigint
		FROM pg_stat_user_tables WHERE schemaname = current_schema()`).Scan(&size)
	return size, err
}

// Report prints the cost per item of the work between before and after
// (n items, named unit), and the bytes per item after Compact (compacted,
// the bytes Compact returned; negative: not measured).
func Report(w io.Writer, unit string, n int, before, after Snapshot, compacted int64) {
	per := func(d int64) float64 { return float64(d) / float64(n) }
	pg := len(after.Ins) > 0
	how := map[bool]string{false: "SQLite file + WAL", true: "PostgreSQL tables, indexes and TOAST"}[pg]
	fmt.Fprintf(w, "database per %s (%d): %s %+.0f bytes (%+.1f MB in all)", unit, n, how, per(after.Bytes-before.Bytes), float64(after.Bytes-before.Bytes)/1e6)
	if compacted >= 0 {
		fmt.Fprintf(w, ", %+.0f bytes after %s", per(compacted-before.Bytes), map[bool]string{false: "wal_checkpoint(TRUNCATE)", true: "VACUUM"}[pg])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "rows added per %s: %s\n", unit, deltas(before.Rows, after.Rows, per))
	fmt.Fprintf(w, "bytes added per %s by table with its indexes: %s\n", unit, deltas(before.Sizes, after.Sizes, per))
	if pg {
		fmt.Fprintf(w, "tuples inserted per %s: %s\n", unit, deltas(before.Ins, after.Ins, per))
		fmt.Fprintf(w, "tuples updated per %s: %s\n", unit, deltas(before.Upd, after.Upd, per))
		fmt.Fprintf(w, "transactions per %s: %.3f (the database's commits, reads and River's polling included); WAL per %s: %.0f bytes (the cluster's: other databases' writes included)\n",
			unit, per(after.Commits-before.Commits), unit, per(after.WAL-before.WAL))
	}
}

// deltas lists the tables whose count changed, largest first, and the total.
func deltas(before, after map[string]int64, per func(int64) float64) string {
	var total int64
	var ts []string
	for t, v := range after {
		if d := v - before[t]; d != 0 {
			ts, total = append(ts, t), total+d
		}
	}
	slices.SortFunc(ts, func(a, b string) int {
		if c := (after[b] - before[b]) - (after[a] - before[a]); c != 0 {
			return int(max(-1, min(1, c)))
		}
		return strings.Compare(a, b)
	})
	parts := []string{short(per(total)) + " in all"}
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s %s", t, short(per(after[t]-before[t]))))
	}
	return strings.Join(parts, ", ")
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// short writes a figure with three significant digits, never in e-notation.
func short(v float64) string {
	if v >= 100 || v <= -100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
