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

// deferred gathers rows of one INSERT shape for a multi-row statement.
type deferred struct {
	table    string
	cols     []string
	conflict string // "" or an ON CONFLICT clause (DeferUpsert)
	args     []any  // rows × len(cols) values, row by row
	rows     int
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
		if d.table == table && d.conflict == conflict && slices.Equal(d.cols, cols) {
			d.args = append(d.args, args...)
			d.rows++
			return
		}
	}
	// Room for a few rows: a group commit defers dozens of each kind.
	tx.inserts = append(tx.inserts, &deferred{table: table, cols: cols, conflict: conflict, args: append(make([]any, 0, 8*len(args)), args...), rows: 1})
}

// insertChunks are the row counts of the multi-row statements; a fixed set
// keeps the number of distinct (prepared) statements small.
var insertChunks = [...]int{64, 16, 4, 1}

func (tx *Tx) flushInserts(ctx context.Context) error {
	for _, f := range tx.flush {
		if err := f(ctx, tx); err != nil {
			return err
		}
	}
	tx.flush = nil
	if tx.guard != nil {
		done, err := tx.flushGuarded(ctx)
		if err != nil || done {
			return err
		}
	}
	if len(tx.inserts) > 0 && tx.db.Dialect == Postgres {
		q, args, ok, err := tx.db.unnestStatement(ctx, tx.inserts)
		if err != nil {
			return err
		}
		if ok {
			tx.inserts = nil
			if tx.sqlTx == nil && len(tx.pending) == 0 {
				// Nothing else to commit: the statement is the transaction.
				_, err = tx.db.W.ExecContext(ctx, q, args...)
				return err
			}
			t, err := tx.begin(ctx)
			if err != nil {
				return err
			}
			_, err = t.ExecContext(ctx, q, args...)
			return err
		}
	}
	for _, d := range tx.inserts {
		prefix := "INSERT INTO " + d.table + " (" + strings.Join(d.cols, ", ") + ") VALUES "
		tuple := "(" + Placeholders(len(d.cols)) + ")"
		width := len(d.cols)
		done := 0
		for _, n := range insertChunks {
			if d.rows-done < n {
				continue
			}
			q := prefix + strings.TrimSuffix(strings.Repeat(tuple+",", n), ",") + d.conflict
			for d.rows-done >= n {
				if _, err := tx.Exec(ctx, q, d.args[done*width:(done+n)*width]...); err != nil {
					return err
				}
				done += n
			}
		}
	}
	tx.inserts = nil
	return nil
}
