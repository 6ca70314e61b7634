package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// BeforeFlush registers f to run inside the transaction just before the
// deferred inserts are written: the last moment to settle a value those rows
// carry (a driver.Valuer among their arguments) with one query for all of
// them.
func (tx *Tx) BeforeFlush(f func(ctx context.Context, tx *Tx) error) {
	tx.flush = append(tx.flush, f)
}

// deferred gathers rows of one INSERT shape for a multi-row statement:
// either a table and columns (DeferInsert, the statement made here), or a
// statement its table's owner wrote out (DeferWritten).
type deferred struct {
	table    string
	cols     []string
	conflict string   // "" or an ON CONFLICT clause (DeferUpsert)
	insert   string   // DeferWritten's head, or ""
	stmt     string   // DeferWritten's statement for PostgreSQL, or ""
	types    []string // stmt's array types, one per column
	args     []any    // rows × width values, row by row
	rows     int
}

// width is the number of values in one row.
func (d *deferred) width() int {
	if d.stmt != "" {
		return len(d.types)
	}
	return len(d.cols)
}

// DeferInsert queues one row for table (columns cols) to be inserted just
// before the transaction commits, together with every other row queued for
// the same table and columns, in multi-row INSERT statements. A group commit
// of many sends thus runs a handful of statements instead of several per
// send. Use it only for rows nothing in the same transaction reads back.
func (tx *Tx) DeferInsert(table string, cols []string, args ...any) {
	tx.DeferUpsert(table, cols, "", args...)
}

// DeferUpsert is DeferInsert with conflict (an ON CONFLICT ... DO UPDATE
// clause, the same on both dialects) ending each statement. The rows of one
// transaction must not conflict with each other (PostgreSQL refuses to
// update a row twice in one statement): the caller sums them first.
func (tx *Tx) DeferUpsert(table string, cols []string, conflict string, args ...any) {
	if len(args) != len(cols) {
		panic("store: DeferInsert with " + strconv.Itoa(len(args)) + " values for " + strconv.Itoa(len(cols)) + " columns")
	}
	for _, d := range tx.inserts {
		if d.stmt == "" && d.table == table && d.conflict == conflict && slices.Equal(d.cols, cols) {
			d.args = append(d.args, args...)
			d.rows++
			return
		}
	}
	// Room for a few rows: a group commit defers dozens of each kind.
	tx.inserts = append(tx.inserts, &deferred{table: table, cols: cols, conflict: conflict, args: append(make([]any, 0, 8*len(args)), args...), rows: 1})
}

// DeferWritten queues rows for a statement written out by its table's
// owner, to run just before the commit with the other deferred rows: insert
// is its "INSERT INTO table (columns)" head, which SQLite runs as VALUES
// lists (ExecValues), and unnest the statement PostgreSQL runs, insert then
// SELECT unnest(?::type[]), ... (one unnest per column, nothing after the
// last), inside the commit's one statement and under the guard's veto (see
// flushStatement). rows hold one value per column, row after row; rows
// queued for the same statement go in together.
func (tx *Tx) DeferWritten(insert, unnest string, rows []any) {
	if len(rows) == 0 {
		return
	}
	for _, d := range tx.inserts {
		if d.stmt == unnest {
			d.args = append(d.args, rows...)
			d.rows += len(rows) / len(d.types)
			return
		}
	}
	types := unnestTypes(unnest)
	if len(types) == 0 || len(rows)%len(types) != 0 || !strings.HasPrefix(unnest, insert) {
		panic("store: DeferWritten with " + strconv.Itoa(len(rows)) + " values for " + strconv.Itoa(len(types)) + " columns")
	}
	tx.inserts = append(tx.inserts, &deferred{insert: insert, stmt: unnest, types: types, args: slices.Clone(rows), rows: len(rows) / len(types)})
}

// unnestTypes reads the array types of q's unnest(?::type[]) casts, in order.
func unnestTypes(q string) []string {
	const open = "unnest(?::"
	var types []string
	for {
		i := strings.Index(q, open)
		if i < 0 {
			return types
		}
		q = q[i+len(open):]
		j := strings.Index(q, "[])")
		if j < 0 {
			return nil
		}
		types = append(types, q[:j])
		q = q[j:]
	}
}

// valuesChunks are the row counts of the multi-row VALUES statements; a
// fixed set keeps the number of distinct (prepared) statements small.
var valuesChunks = [...]int{64, 16, 4, 1}

// ExecValues inserts rows (width values each, row after row) with insert,
// an "INSERT INTO table (columns)" head, as multi-row VALUES statements of
// 64, 16, 4 and 1 rows, each ended with tail ("" or an ON CONFLICT clause).
func (tx *Tx) ExecValues(ctx context.Context, insert string, width int, rows []any, tail string) error {
	n := len(rows) / width
	if n == 0 {
		return nil
	}
	tuple := "(" + Placeholders(width) + ")"
	done := 0
	for _, size := range valuesChunks {
		if n-done < size {
			continue
		}
		q := insert + " VALUES " + strings.TrimSuffix(strings.Repeat(tuple+",", size), ",") + tail
		for n-done >= size {
			if _, err := tx.Exec(ctx, q, rows[done*width:(done+size)*width]...); err != nil {
				return err
			}
			done += size
		}
	}
	return nil
}

// flushInserts writes the deferred rows: on PostgreSQL in one statement
// with the guard (flushStatement), on SQLite as VALUES lists.
func (tx *Tx) flushInserts(ctx context.Context) error {
	for _, f := range tx.flush {
		if err := f(ctx, tx); err != nil {
			return err
		}
	}
	tx.flush = nil
	if tx.db.Dialect == Postgres {
		return tx.flushStatement(ctx)
	}
	err := tx.execValues(ctx, tx.inserts)
	tx.inserts = nil
	return err
}

// execValues writes ds as VALUES lists.
func (tx *Tx) execValues(ctx context.Context, ds []*deferred) error {
	for _, d := range ds {
		insert := d.insert
		if insert == "" {
			insert = "INSERT INTO " + d.table + " (" + strings.Join(d.cols, ", ") + ")"
		}
		if err := tx.ExecValues(ctx, insert, d.width(), d.args, d.conflict); err != nil {
			return err
		}
	}
	return nil
}
