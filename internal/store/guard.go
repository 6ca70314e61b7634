package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Guard is a read that rides on the statement writing a transaction's
// deferred rows (PostgreSQL), and can keep them out, saving the round trip
// of a read before the writes. The caller writes as if the read will find
// what it expects, and Veto says, over what the read found, whether it did
// not: then nothing is written and CommitLater answers ErrVetoed, with Row
// having seen what the read found, so the caller can do the work again
// knowing it.
//
// Read, veto and writes are one statement, so they see one snapshot, and the
// rows go in exactly when the veto is false.
type Guard struct {
	// Query is a SELECT with ? placeholders whose rows have four columns, an
	// integer and three texts, which Veto sees as g(kind, a, b, c).
	Query string
	Args  []any
	// Veto is a boolean SQL expression with ? placeholders over g.
	Veto     string
	VetoArgs []any
	// Row receives each row the read found.
	Row func(kind int, a, b, c string)
}

// ErrVetoed is CommitLater's answer when the transaction's guard kept its
// writes out: nothing of the transaction was committed.
var ErrVetoed = errors.New("store: the guard kept the transaction's writes out")

// CanGuard reports whether SetGuard is available (PostgreSQL: on SQLite a
// read inside the one writer's transaction costs no round trip).
func (tx *Tx) CanGuard() bool { return tx.db.Dialect == Postgres }

// SetGuard makes the transaction's deferred rows depend on g (see Guard).
func (tx *Tx) SetGuard(g *Guard) {
	if !tx.CanGuard() {
		panic("store: SetGuard on " + tx.db.Dialect.String())
	}
	tx.guard = g
}

// flushStatement writes the transaction's deferred rows on PostgreSQL: one
// statement holds the guard's read and veto (when set) and every table's
// rows (unnestParts), each insert kept out when the veto holds:
//
//	WITH g(kind, a, b, c) AS (<Query>), v AS (SELECT (<Veto>) AS veto),
//	     w0 AS (INSERT INTO emails (...) SELECT unnest(...), ... WHERE NOT (SELECT veto FROM v)),
//	     w1 AS (...)
//	SELECT v.veto, g.kind, g.a, g.b, g.c FROM v LEFT JOIN g ON true
//
// When that statement is the whole transaction (no statement before it, no
// job to insert after) it commits on its own, on the direct path where it
// can (pgdirect.go); else it runs inside the transaction. It answers
// ErrVetoed when the veto held. Rows of a table whose values do not unnest
// follow as VALUES lists inside the transaction.
func (tx *Tx) flushStatement(ctx context.Context) error {
	g := tx.guard
	tx.guard = nil
	if len(tx.inserts) == 0 && g == nil {
		return nil
	}
	var args []any
	var q strings.Builder
	q.WriteString("WITH ")
	if g != nil {
		q.WriteString("g(kind, a, b, c) AS (")
		q.WriteString(rebindFrom(g.Query, len(args)))
		args = append(args, g.Args...)
		q.WriteString("), v AS (SELECT (")
		q.WriteString(rebindFrom(g.Veto, len(args)))
		args = append(args, g.VetoArgs...)
		q.WriteString(") AS veto)")
	}
	parts, arrays, values, err := tx.db.unnestParts(ctx, tx.inserts, len(args))
	if err != nil {
		return err
	}
	tx.inserts = nil
	args = append(args, arrays...)
	for i, part := range parts {
		if i > 0 || g != nil {
			q.WriteString(", ")
		}
		q.WriteString("w" + strconv.Itoa(i) + " AS (")
		q.WriteString(part.sql)
		if g != nil {
			q.WriteString(" WHERE NOT (SELECT veto FROM v)")
		}
		q.WriteString(part.conflict)
		q.WriteString(")")
	}
	if g != nil {
		q.WriteString(" SELECT v.veto, g.kind, g.a, g.b, g.c FROM v LEFT JOIN g ON true")
	} else {
		q.WriteString(" SELECT false, NULL::int8, NULL::text, NULL::text, NULL::text")
	}
	if len(parts) > 0 || g != nil {
		veto := false
		found := guardFound(func(v bool, kind sql.NullInt64, a, b, c sql.NullString) {
			veto = v
			if kind.Valid && g != nil {
				g.Row(int(kind.Int64), a.String, b.String, c.String)
			}
		})
		alone := tx.sqlTx == nil && len(tx.pending) == 0 && len(values) == 0
		err = errNoDirect
		if alone {
			err = tx.db.queryDirect(ctx, q.String(), args, func(vals [][]byte) error { return guardRow(vals, found) })
		}
		if errors.Is(err, errNoDirect) {
			err = tx.queryGuard(ctx, q.String(), args, alone, found)
		}
		if err != nil {
			return err
		}
		if veto {
			return ErrVetoed
		}
	}
	return tx.execValues(ctx, values)
}

// guardFound receives each row of a guard statement: the veto and what the
// read found (kind NULL when it found nothing).
type guardFound func(veto bool, kind sql.NullInt64, a, b, c sql.NullString)

// guardRow reads a guard statement's row as the direct path returns it
// (text values, nil for NULL).
func guardRow(vals [][]byte, found guardFound) error {
	if len(vals) != 5 {
		return fmt.Errorf("store: a guard's row has %d columns, want 5", len(vals))
	}
	var kind sql.NullInt64
	if vals[1] != nil {
		n, err := strconv.ParseInt(string(vals[1]), 10, 64)
		if err != nil {
			return fmt.Errorf("store: a guard's kind %q: %w", vals[1], err)
		}
		kind = sql.NullInt64{Int64: n, Valid: true}
	}
	text := func(v []byte) sql.NullString { return sql.NullString{String: string(v), Valid: v != nil} }
	found(string(vals[0]) == "t", kind, text(vals[2]), text(vals[3]), text(vals[4]))
	return nil
}

// queryGuard runs a guard statement through database/sql: on the pool when
// it is the whole transaction (alone), else inside the transaction.
func (tx *Tx) queryGuard(ctx context.Context, q string, args []any, alone bool, found guardFound) error {
	var rows *sql.Rows
	var err error
	if alone {
		rows, err = tx.db.W.QueryContext(ctx, q, args...)
	} else {
		t, berr := tx.begin(ctx)
		if berr != nil {
			return berr
		}
		rows, err = t.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v bool
		var kind sql.NullInt64
		var a, b, c sql.NullString
		if err := rows.Scan(&v, &kind, &a, &b, &c); err != nil {
			return err
		}
		found(v, kind, a, b, c)
	}
	return rows.Err()
}
