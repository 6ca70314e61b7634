package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
)

// unnestStatement is every deferred row of the transaction as one
// statement on PostgreSQL: one INSERT ... SELECT unnest($1::text[]),
// unnest($2::int8[]), ... per table, with one array per column, the tables
// joined as data-modifying WITH clauses:
//
//	WITH i0 AS (INSERT INTO emails (...) SELECT unnest(...), unnest(...))
//	INSERT INTO events (...) SELECT unnest(...), ...
//
// However many rows a group commit gathered, that is one round trip, where
// VALUES lists of fixed sizes took up to a dozen per table. The unnests
// stand in the select list, where PostgreSQL runs them in step (row i takes
// every array's element i) and streams the rows; unnest(a, b, ...) in FROM
// would first copy them all into a tuplestore. It reports false when a
// value has a type it does not convert, so that the caller falls back to
// VALUES lists. The query is already in $n form (it bypasses Rebind).
func (db *DB) unnestStatement(ctx context.Context, ds []*deferred) (string, []any, bool, error) {
	parts, args, ok, err := db.unnestParts(ctx, ds)
	if err != nil || !ok {
		return "", nil, false, err
	}
	parts = withConflict(parts, ds)
	var q strings.Builder
	for i, part := range parts[:len(parts)-1] {
		if i == 0 {
			q.WriteString("WITH ")
		} else {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "i%d AS (%s)", i, part)
		q.WriteString(" ")
	}
	q.WriteString(parts[len(parts)-1])
	return q.String(), args, true, nil
}

// unnestParts is one INSERT per table of ds, their parameters numbered
// from $1 on in order.
func (db *DB) unnestParts(ctx context.Context, ds []*deferred) ([]string, []any, bool, error) {
	var parts []string
	var args []any
	for _, d := range ds {
		part, arrays, ok, err := db.unnestPart(ctx, d, len(args))
		if err != nil || !ok {
			return nil, nil, false, err
		}
		parts = append(parts, part)
		args = append(args, arrays...)
	}
	return parts, args, true, nil
}

// unnestPart is the INSERT for one table's rows, its parameters numbered
// from offset+1.
func (db *DB) unnestPart(ctx context.Context, d *deferred, offset int) (string, []any, bool, error) {
	types, err := db.columnTypes(ctx, d.table)
	if err != nil {
		return "", nil, false, err
	}
	arrays := make([]any, len(d.cols))
	unnests := make([]string, len(d.cols))
	for c, col := range d.cols {
		udt, ok := types[col]
		if !ok {
			return "", nil, false, nil
		}
		unnests[c] = "unnest($" + strconv.Itoa(offset+c+1) + "::" + udt + "[])"
		var arr any
		switch udt {
		case "text", "varchar":
			arr, ok = column(d, c, textValue)
		case "int2", "int4", "int8":
			arr, ok = column(d, c, intValue)
		default:
			ok = false
		}
		if !ok {
			return "", nil, false, nil
		}
		arrays[c] = arr
	}
	return "INSERT INTO " + d.table + " (" + strings.Join(d.cols, ", ") + ") SELECT " + strings.Join(unnests, ", "), arrays, true, nil
}

// withConflict is the parts of unnestParts each ended with its rows' ON
// CONFLICT clause (a guarded statement puts its WHERE before it).
func withConflict(parts []string, ds []*deferred) []string {
	for i, d := range ds {
		parts[i] += d.conflict
	}
	return parts
}

// column gathers column c of d's rows as one array, converting each value
// with conv; false when a value does not convert. A column without NULLs is
// a slice of values ([]string, []int64), which pgx encodes directly; one
// with NULLs is a slice of pointers (nil for NULL), which pgx encodes
// through reflection, element by element, in the one committer's time.
func column[T any](d *deferred, c int, conv func(any) (T, bool, bool)) (any, bool) {
	vals := make([]T, d.rows)
	var null []bool
	for r := range d.rows {
		v, isNull, ok := conv(d.args[r*len(d.cols)+c])
		if !ok {
			return nil, false
		}
		if isNull {
			if null == nil {
				null = make([]bool, d.rows)
			}
			null[r] = true
		}
		vals[r] = v
	}
	if null == nil {
		return vals, true
	}
	ptrs := make([]*T, d.rows)
	for r := range vals {
		if !null[r] {
			ptrs[r] = &vals[r]
		}
	}
	return ptrs, true
}

func resolve(v any) (any, bool) {
	if dv, ok := v.(driver.Valuer); ok {
		x, err := dv.Value()
		return x, err == nil
	}
	return v, true
}

// textValue converts v for a text column: its value, whether it is NULL,
// and false when it does not convert.
func textValue(v any) (string, bool, bool) {
	v, ok := resolve(v)
	if !ok {
		return "", false, false
	}
	switch x := v.(type) {
	case nil:
		return "", true, true
	case string:
		return x, false, true
	case []byte:
		return string(x), false, true
	}
	return "", false, false
}

// intValue converts v for an integer column, as textValue.
func intValue(v any) (int64, bool, bool) {
	v, ok := resolve(v)
	if !ok {
		return 0, false, false
	}
	switch x := v.(type) {
	case nil:
		return 0, true, true
	case int:
		return int64(x), false, true
	case int64:
		return x, false, true
	case int32:
		return int64(x), false, true
	case bool:
		if x {
			return 1, false, true
		}
		return 0, false, true
	}
	return 0, false, false
}

// columnTypes returns the PostgreSQL type names of table's columns, read
// once per handle (a handle serves one schema: its search_path).
func (db *DB) columnTypes(ctx context.Context, table string) (map[string]string, error) {
	if v, ok := db.coltypes.Load(table); ok {
		return v.(map[string]string), nil
	}
	rows, err := db.W.QueryContext(ctx, `SELECT column_name, udt_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1`, table)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", table, err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var col, udt string
		if err := rows.Scan(&col, &udt); err != nil {
			return nil, err
		}
		m[col] = udt
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	db.coltypes.Store(table, m)
	return m, nil
}
