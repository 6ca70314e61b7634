package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
)

// An unnest part is one table's deferred rows as one INSERT ... SELECT
// unnest($1::text[]), unnest($2::int8[]), ... with one array per column;
// flushStatement joins the parts of a transaction as data-modifying WITH
// clauses of one statement:
//
//	WITH w0 AS (INSERT INTO emails (...) SELECT unnest(...), unnest(...)),
//	     w1 AS (INSERT INTO events (...) SELECT unnest(...), ...) SELECT ...
//
// However many rows a group commit gathered, that is one round trip, where
// VALUES lists of fixed sizes took up to a dozen per table. The unnests
// stand in the select list, where PostgreSQL runs them in step (row i takes
// every array's element i) and streams the rows; unnest(a, b, ...) in FROM
// would first copy them all into a tuplestore.
type unnestPart struct {
	sql      string // in $n form (it bypasses Rebind)
	conflict string // its ON CONFLICT clause, or ""
}

// unnestParts is one part per table of ds, their parameters numbered from
// offset+1 on in order. A table deferred with DeferInsert whose values have
// a type this does not convert is left out and answered in values, for
// VALUES lists; a written-out statement (DeferWritten) always has its part.
func (db *DB) unnestParts(ctx context.Context, ds []*deferred, offset int) (parts []unnestPart, args []any, values []*deferred, err error) {
	for _, d := range ds {
		var part string
		var arrays []any
		if d.stmt != "" {
			part, arrays, err = writtenPart(d, offset+len(args))
		} else {
			var ok bool
			part, arrays, ok, err = db.unnestPart(ctx, d, offset+len(args))
			if err == nil && !ok {
				values = append(values, d)
				continue
			}
		}
		if err != nil {
			return nil, nil, nil, err
		}
		parts = append(parts, unnestPart{sql: part, conflict: d.conflict})
		args = append(args, arrays...)
	}
	return parts, args, values, nil
}

// writtenPart is a DeferWritten statement with its arrays, its parameters
// numbered from offset+1.
func writtenPart(d *deferred, offset int) (string, []any, error) {
	arrays := make([]any, len(d.types))
	for c, typ := range d.types {
		arr, ok := typedColumn(d, c, typ)
		if !ok {
			return "", nil, fmt.Errorf("store: a value of column %d of %.40q... is not a %s", c+1, d.stmt, typ)
		}
		arrays[c] = arr
	}
	return rebindFrom(d.stmt, offset), arrays, nil
}

// typedColumn gathers column c of d's rows as an array for PostgreSQL type
// udt; false when a value does not convert or udt is not handled.
func typedColumn(d *deferred, c int, udt string) (any, bool) {
	switch udt {
	case "text", "varchar":
		return column(d, c, textValue)
	case "int2", "int4", "int8":
		return column(d, c, intValue)
	}
	return nil, false
}

// unnestPart is the INSERT for one table's rows deferred with DeferInsert,
// its column types read from the schema, its parameters numbered from
// offset+1; false when a column's type or value does not convert.
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
		if arrays[c], ok = typedColumn(d, c, udt); !ok {
			return "", nil, false, nil
		}
	}
	return "INSERT INTO " + d.table + " (" + strings.Join(d.cols, ", ") + ") SELECT " + strings.Join(unnests, ", "), arrays, true, nil
}

// column gathers column c of d's rows as one array, converting each value
// with conv; false when a value does not convert. A column without NULLs is
// a slice of values ([]string, []int64), which pgx encodes directly; one
// with NULLs is a slice of pointers (nil for NULL), which pgx encodes
// through reflection, element by element, in the one committer's time.
func column[T any](d *deferred, c int, conv func(any) (T, bool, bool)) (any, bool) {
	vals := make([]T, d.rows)
	var null []bool
	w := d.width()
	for r := range d.rows {
		v, isNull, ok := conv(d.args[r*w+c])
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
