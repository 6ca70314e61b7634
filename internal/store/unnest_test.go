package store

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// BenchmarkUnnestColumns is the committer's share of a PostgreSQL group
// commit's arrays: 28 sends' email rows gathered into one array per column
// and encoded as pgx sends them (binary), one column holding NULLs.
func BenchmarkUnnestColumns(b *testing.B) {
	const rows, cols = 28, 22
	d := &deferred{table: "emails", rows: rows}
	for c := range cols {
		d.cols = append(d.cols, fmt.Sprintf("c%d", c))
	}
	for r := range rows {
		for c := range cols {
			var v any = fmt.Sprintf("value %d of row %d", c, r)
			if c == 0 && r%2 == 0 {
				v = nil
			}
			d.args = append(d.args, v)
		}
	}
	m := pgtype.NewMap()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		for c := range cols {
			arr, ok := column(d, c, textValue)
			if !ok {
				b.Fatal("column did not convert")
			}
			var err error
			if buf, err = m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, arr, buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
