package store_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/lib/pq"

	"mailroom/internal/store"
)

// Parameters given as lib/pq arrays (River's database/sql driver passes
// them so) are encoded by pgx as the slices inside, in binary, and read
// back exactly as given: every element type River uses, NULL elements,
// empty arrays, and a nil array as NULL.
func TestPQArraysEncodeAsTheirSlices(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	if db.Dialect != store.Postgres {
		t.Skip("pgx is PostgreSQL's driver")
	}
	conn, err := db.W.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error {
		m := dc.(*stdlib.Conn).Conn().TypeMap()
		for _, tc := range []struct {
			oid   uint32
			value any
		}{
			{pgtype.TextArrayOID, pq.Array([]string{"a"})},
			{pgtype.Int8ArrayOID, pq.Array([]int64{1})},
			{pgtype.Int4ArrayOID, pq.Array([]int32{1})},
			{pgtype.ByteaArrayOID, pq.Array([][]byte{{1}})},
			{pgtype.Int2ArrayOID, pq.Array([]int16{1})},
			{pgtype.TimestamptzArrayOID, pq.Array([]time.Time{time.Now()})},
		} {
			if plan := m.PlanEncode(tc.oid, pgtype.BinaryFormatCode, tc.value); !store.IsPQArrayPlan(plan) {
				t.Errorf("%T is encoded by %T, not as the slice it wraps", tc.value, plan)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if _, err := db.W.ExecContext(ctx, `CREATE TABLE pq_t (s TEXT[], i8 INT8[], i4 INT4[], i2 INT2[], b BYTEA[], at TIMESTAMPTZ[], ok BOOL[], f FLOAT8[], none TEXT[])`); err != nil {
		t.Fatal(err)
	}
	at := []time.Time{time.Date(2026, 11, 25, 5, 30, 0, 123456000, time.UTC), time.Date(1999, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))}
	s := []string{"", "a,b", `q"uote`, "ünï", "NULL"}
	i8 := []int64{0, -1, 1 << 62}
	i4 := []int32{-1 << 31, 7}
	i2 := []int16{-1, 1 << 14}
	b := [][]byte{nil, {}, {0, 0xff}}
	ok := []bool{true, false}
	f := []float64{1.5, -0.25}
	if _, err := db.W.ExecContext(ctx, `INSERT INTO pq_t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		pq.Array(s), pq.Array(i8), pq.Array(i4), pq.Array(i2), pq.Array(b), pq.Array(at), pq.Array(ok), pq.Array(f), pq.Array([]string(nil))); err != nil {
		t.Fatal(err)
	}
	var gotS, gotNone []string
	var gotI8, gotI4, gotI2 []int64
	var gotB [][]byte
	var gotOK []bool
	var gotF []float64
	var gotAt []sql.NullTime
	var noneIsNull bool
	if err := db.W.QueryRowContext(ctx, `SELECT s, i8, i4, i2, b, ok, f, none, none IS NULL FROM pq_t`).Scan(
		pq.Array(&gotS), pq.Array(&gotI8), pq.Array(&gotI4), pq.Array(&gotI2), pq.Array(&gotB), pq.Array(&gotOK), pq.Array(&gotF), pq.Array(&gotNone), &noneIsNull); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotS, s) || !slices.Equal(gotI8, i8) || !slices.Equal(gotOK, ok) || !slices.Equal(gotF, f) {
		t.Errorf("read back s=%q i8=%v ok=%v f=%v, want %q %v %v %v", gotS, gotI8, gotOK, gotF, s, i8, ok, f)
	}
	if !slices.Equal(gotI4, []int64{int64(i4[0]), int64(i4[1])}) || !slices.Equal(gotI2, []int64{int64(i2[0]), int64(i2[1])}) {
		t.Errorf("read back i4=%v i2=%v, want %v %v", gotI4, gotI2, i4, i2)
	}
	// A nil element is NULL (which River's nullif leaves NULL, as it made
	// the empty bytea lib/pq wrote).
	var nulls []bool
	if err := db.W.QueryRowContext(ctx, `SELECT array_agg(x IS NULL ORDER BY n) FROM pq_t, unnest(b) WITH ORDINALITY AS u(x, n)`).Scan(pq.Array(&nulls)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nulls, []bool{true, false, false}) || len(gotB) != 3 || len(gotB[1]) != 0 || !slices.Equal(gotB[2], b[2]) {
		t.Errorf("bytea elements read back %x (NULL: %v), want %x with the first NULL", gotB, nulls, b)
	}
	if !noneIsNull || gotNone != nil {
		t.Errorf("a nil array read back as %q (NULL: %v), want NULL", gotNone, noneIsNull)
	}
	rows, err := db.W.QueryContext(ctx, `SELECT unnest(at) FROM pq_t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v sql.NullTime
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		gotAt = append(gotAt, v)
	}
	if len(gotAt) != len(at) {
		t.Fatalf("read back %d times, want %d", len(gotAt), len(at))
	}
	for i, v := range gotAt {
		if !v.Valid || !v.Time.Equal(at[i]) {
			t.Errorf("time %d read back %v, want %v", i, v.Time, at[i])
		}
	}
}
