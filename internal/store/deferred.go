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
// statement its table's owner wrote out (DeferUnnest).
type deferred struct {
	table    string
	cols     []string
	conflict string   // "" or an ON CONFLICT clause (DeferUpsert)
	stmt     string   // DeferUnnest's statement, or ""
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

// DeferUnnest queues rows for q on PostgreSQL: q is an INSERT ... SELECT
// unnest(?::type[]), ... statement written out by its table's owner (one
// unnest per column, nothing after the last), and rows hold one value per
// unnest, row after row. q runs in the commit's one statement (see
// flushStatement), beside the other deferred rows and under the guard's
// veto; rows queued for the same q go in together. On SQLite the owner runs
// its VALUES form itself (ExecValues).
func (tx *Tx) DeferUnnest(q string, rows []any) {
	if tx.db.Dialect != Postgres {
		panic("store: DeferUnnest on " + tx.db.Dialect.String())
	}
	if len(rows) == 0 {
		return
	}
	for _, d := range tx.inserts {
		if d.stmt == q {
			d.args = append(d.args, rows...)
			d.rows += len(rows) / len(d.types)
			return
		}
	}
	types := unnestTypes(q)
	if len(types) == 0 || len(rows)%len(types) != 0 {
		panic("store: DeferUnnest with " + strconv.Itoa(len(rows)) + " values for " + strconv.Itoa(len(types)) + " columns")
	}
	tx.inserts = append(tx.inserts, &deferred{stmt: q, types: types, args: slices.Clone(rows), rows: len(rows) / len(types)})
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

// execValues writes ds (DeferInsert's rows) as VALUES lists.
func (tx *Tx) execValues(ctx context.Context, ds []*deferred) error {
	for _, d := range ds {
		if err := tx.ExecValues(ctx, "INSERT INTO "+d.table+" ("+strings.Join(d.cols, ", ")+")", len(d.cols), d.args, d.conflict); err != nil {
			return err
		}
	}
	return nil
}
