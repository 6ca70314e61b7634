package store_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"

	"mailroom/internal/store"
)

// The direct path encodes its parameters itself (binary arrays and
// scalars), so what it writes must read back exactly as given: NULLs,
// empty strings, non-ASCII text, every integer width, empty arrays. The
// rows it returns come back as text, NULL as nil.
func TestQueryDirectRoundTrip(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	if db.Dialect != store.Postgres {
		t.Skip("the direct path is PostgreSQL's")
	}
	if _, err := db.Exec(ctx, `CREATE TABLE direct_t (s TEXT, v VARCHAR(20), i8 BIGINT, i4 INTEGER, i2 SMALLINT, tag TEXT, flag BOOLEAN)`); err != nil {
		t.Fatal(err)
	}
	ptr := func(s string) *string { return &s }
	i64 := func(n int64) *int64 { return &n }
	q := `INSERT INTO direct_t (s, v, i8, i4, i2, tag, flag)
		SELECT unnest($1::text[]), unnest($2::varchar[]), unnest($3::int8[]), unnest($4::int4[]), unnest($5::int2[]), $6::text, $7::boolean
		RETURNING s, i8, tag, flag`
	args := []any{
		[]*string{ptr("plain"), ptr(""), nil, ptr("ünïcødé ✉ \"quoted\" {x}")},
		[]string{"a", "b", "c", "d"},
		[]*int64{i64(-1 << 40), nil, i64(0), i64(1<<62 + 7)},
		[]int64{-2147483648, 2147483647, 0, 42},
		[]int64{-32768, 32767, 1, -1},
		"shared",
		true,
	}
	var returned [][]*string
	if err := db.QueryDirect(ctx, q, args, func(vals [][]byte) error {
		row := make([]*string, len(vals))
		for i, v := range vals {
			if v != nil {
				row[i] = ptr(string(v))
			}
		}
		returned = append(returned, row)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(returned) != 4 {
		t.Fatalf("%d rows returned, want 4", len(returned))
	}
	if r := returned[2]; r[0] != nil || *r[1] != "0" || *r[2] != "shared" || *r[3] != "t" {
		t.Errorf("third returned row: %v %v %v %v, want NULL, 0, shared, t", r[0], r[1], r[2], r[3])
	}

	rows, err := db.Query(ctx, `SELECT s, v, i8, i4, i2, tag, flag FROM direct_t ORDER BY v`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type row struct {
		s      sql.NullString
		v      string
		i8     sql.NullInt64
		i4, i2 int64
		tag    string
		flag   bool
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.s, &r.v, &r.i8, &r.i4, &r.i2, &r.tag, &r.flag); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []row{
		{sql.NullString{String: "plain", Valid: true}, "a", sql.NullInt64{Int64: -1 << 40, Valid: true}, -2147483648, -32768, "shared", true},
		{sql.NullString{String: "", Valid: true}, "b", sql.NullInt64{}, 2147483647, 32767, "shared", true},
		{sql.NullString{}, "c", sql.NullInt64{Int64: 0, Valid: true}, 0, 1, "shared", true},
		{sql.NullString{String: "ünïcødé ✉ \"quoted\" {x}", Valid: true}, "d", sql.NullInt64{Int64: 1<<62 + 7, Valid: true}, 42, -1, "shared", true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}

	// Empty arrays insert nothing and are no error.
	n := 0
	if err := db.QueryDirect(ctx, q, []any{[]string{}, []string{}, []int64{}, []int64{}, []int64{}, "none", false},
		func([][]byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("empty arrays: %d rows, err %v", n, err)
	}

	// A value it does not encode (a float, an int4 out of range) sends
	// nothing: the caller falls back to database/sql.
	for _, bad := range [][]any{
		{[]string{"x"}, []string{"y"}, []int64{1}, []int64{1}, []int64{1}, 1.5, true},
		{[]string{"x"}, []string{"y"}, []int64{1}, []int64{1 << 40}, []int64{1}, "t", true},
	} {
		if err := db.QueryDirect(ctx, q, bad, func([][]byte) error { return nil }); !errors.Is(err, store.ErrNoDirect) {
			t.Errorf("QueryDirect(%v) = %v, want ErrNoDirect", bad, err)
		}
	}
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM direct_t`).Scan(&total); err != nil || total != 4 {
		t.Errorf("%d rows in all (err %v), want the 4 written", total, err)
	}

	// A database error comes back as such, not as ErrNoDirect.
	if err := db.QueryDirect(ctx, `SELECT 1/$1::int8`, []any{int64(0)}, func([][]byte) error { return nil }); err == nil || errors.Is(err, store.ErrNoDirect) {
		t.Errorf("division by zero answered %v", err)
	}
}
