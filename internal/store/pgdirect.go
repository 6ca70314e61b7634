package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
)

// errNoDirect says queryDirect cannot run a statement (an argument of a
// type it does not encode, or a driver that is not pgx): the caller runs it
// through database/sql instead. Nothing was executed.
var errNoDirect = errors.New("store: statement not eligible for the direct path")

// queryDirect runs q, a statement in $n form, on a connection of the
// writer pool through pgconn, calling row with each result row's values in
// text format (nil for NULL), and commits it on its own.
//
// It exists for the group commit's one big statement, whose Bind message
// is 30–40 KB. Through database/sql, pgx encodes each array element as an
// interface value into a parameter buffer that starts at 256 bytes and
// doubles, then copies the Bind into a write buffer that starts at 1 KiB
// and doubles, and drops both buffers again after the statement, the
// largest source of garbage in a PostgreSQL send run. Here the arrays are
// encoded in PostgreSQL's binary format into one reused buffer, and the
// write buffer is grown once to the Bind's size before it is encoded.
func (db *DB) queryDirect(ctx context.Context, q string, args []any, row func(vals [][]byte) error) error {
	conn, err := db.W.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errNoDirect
		}
		pc := sc.Conn()
		sd, err := pc.Prepare(ctx, statementName(q), q)
		if err != nil {
			return err
		}
		if len(sd.ParamOIDs) != len(args) {
			return fmt.Errorf("store: %d arguments for %d parameters", len(args), len(sd.ParamOIDs))
		}
		bp := paramBufs.Get().(*paramBuf)
		defer paramBufs.Put(bp)
		values, formats, ok := bp.encode(sd.ParamOIDs, args)
		if !ok {
			return errNoDirect
		}
		size := 64 + len(sd.Name) + 2*len(formats)
		for _, v := range values {
			size += 4 + len(v)
		}
		pgc := pc.PgConn()
		pgc.Frontend().Send(reserve(size))
		rr := pgc.ExecStatement(ctx, sd, values, formats, nil)
		var rowErr error
		for rr.NextRow() {
			if rowErr == nil {
				rowErr = row(rr.Values())
			}
		}
		if _, err := rr.Close(); err != nil {
			return err
		}
		db.direct.Add(1)
		return rowErr
	})
}

// statementName names a prepared statement after its text (pgx prepares it
// once per connection and answers later calls from its cache).
func statementName(q string) string {
	h := fnv.New64a()
	h.Write([]byte(q))
	return fmt.Sprintf("mr_%016x", h.Sum64())
}

// reserve is a frontend message that sends nothing: encoding it only grows
// the connection's write buffer to hold n more bytes, so that the Bind
// encoded next is written into it without doubling its way there.
type reserve int

func (reserve) Frontend()             {}
func (reserve) Decode(_ []byte) error { return nil }
func (n reserve) Encode(dst []byte) ([]byte, error) {
	return slices.Grow(dst, int(n)), nil
}

var _ pgproto3.FrontendMessage = reserve(0)

// paramBuf holds the encoded parameters of one statement; it is reused.
type paramBuf struct {
	b       []byte
	values  [][]byte
	formats []int16
	ends    []int // end of each value in b (-1 for NULL)
}

var paramBufs = sync.Pool{New: func() any { return &paramBuf{} }}

// encode encodes args in binary format for parameters of the given types;
// false when an argument has a type or value it does not encode.
func (p *paramBuf) encode(oids []uint32, args []any) ([][]byte, []int16, bool) {
	p.b, p.ends, p.formats = p.b[:0], p.ends[:0], p.formats[:0]
	for i, a := range args {
		a, ok := resolve(a)
		if !ok {
			return nil, nil, false
		}
		end := -1 // NULL
		if a != nil {
			if p.b, ok = appendValue(p.b, oids[i], a); !ok {
				return nil, nil, false
			}
			end = len(p.b)
		}
		p.ends = append(p.ends, end)
		p.formats = append(p.formats, pgtype.BinaryFormatCode)
	}
	// The values are cut from b only now: b may have moved while growing.
	p.values = p.values[:0]
	start := 0
	for _, end := range p.ends {
		if end < 0 {
			p.values = append(p.values, nil)
			continue
		}
		p.values = append(p.values, p.b[start:end:end])
		start = end
	}
	return p.values, p.formats, true
}

// appendValue appends a in the binary format of type oid.
func appendValue(b []byte, oid uint32, a any) ([]byte, bool) {
	switch oid {
	case pgtype.TextOID, pgtype.VarcharOID:
		if s, _, ok := textValue(a); ok {
			return append(b, s...), true
		}
	case pgtype.Int8OID, pgtype.Int4OID, pgtype.Int2OID:
		if n, _, ok := intValue(a); ok {
			return appendInt(b, oid, n)
		}
	case pgtype.BoolOID:
		if x, ok := a.(bool); ok {
			if x {
				return append(b, 1), true
			}
			return append(b, 0), true
		}
	case pgtype.TextArrayOID, pgtype.VarcharArrayOID:
		elem := uint32(pgtype.TextOID)
		if oid == pgtype.VarcharArrayOID {
			elem = pgtype.VarcharOID
		}
		switch x := a.(type) {
		case []string:
			return appendArray(b, elem, len(x), false, func(b []byte, i int) ([]byte, bool) { return append(b, x[i]...), true }, nil)
		case []*string:
			return appendArray(b, elem, len(x), slices.Contains(x, nil),
				func(b []byte, i int) ([]byte, bool) { return append(b, *x[i]...), true },
				func(i int) bool { return x[i] == nil })
		}
	case pgtype.Int8ArrayOID, pgtype.Int4ArrayOID, pgtype.Int2ArrayOID:
		elem := uint32(pgtype.Int8OID)
		switch oid {
		case pgtype.Int4ArrayOID:
			elem = pgtype.Int4OID
		case pgtype.Int2ArrayOID:
			elem = pgtype.Int2OID
		}
		switch x := a.(type) {
		case []int64:
			return appendArray(b, elem, len(x), false, func(b []byte, i int) ([]byte, bool) { return appendInt(b, elem, x[i]) }, nil)
		case []*int64:
			return appendArray(b, elem, len(x), slices.Contains(x, nil),
				func(b []byte, i int) ([]byte, bool) { return appendInt(b, elem, *x[i]) },
				func(i int) bool { return x[i] == nil })
		}
	}
	return b, false
}

// appendInt appends n as an integer of type oid; false when it does not fit.
func appendInt(b []byte, oid uint32, n int64) ([]byte, bool) {
	switch oid {
	case pgtype.Int8OID:
		return binary.BigEndian.AppendUint64(b, uint64(n)), true
	case pgtype.Int4OID:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return b, false
		}
		return binary.BigEndian.AppendUint32(b, uint32(int32(n))), true
	case pgtype.Int2OID:
		if n < math.MinInt16 || n > math.MaxInt16 {
			return b, false
		}
		return binary.BigEndian.AppendUint16(b, uint16(int16(n))), true
	}
	return b, false
}

// appendArray appends a one-dimensional array of n elements of type elem in
// PostgreSQL's binary format: a header (dimensions, whether any element is
// NULL, the element type, then length and lower bound of the dimension),
// then each element as its length and bytes, or length -1 for NULL.
func appendArray(b []byte, elem uint32, n int, hasNull bool, item func([]byte, int) ([]byte, bool), isNull func(int) bool) ([]byte, bool) {
	if n > math.MaxInt32 {
		return b, false
	}
	ndim := uint32(1)
	if n == 0 {
		ndim = 0
	}
	b = binary.BigEndian.AppendUint32(b, ndim)
	if hasNull {
		b = binary.BigEndian.AppendUint32(b, 1)
	} else {
		b = binary.BigEndian.AppendUint32(b, 0)
	}
	b = binary.BigEndian.AppendUint32(b, elem)
	if n == 0 {
		return b, true
	}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = binary.BigEndian.AppendUint32(b, 1)
	for i := range n {
		if isNull != nil && isNull(i) {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1
			continue
		}
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		var ok bool
		if b, ok = item(b, i); !ok {
			return b, false
		}
		l := len(b) - at - 4
		if l > math.MaxInt32 {
			return b, false
		}
		binary.BigEndian.PutUint32(b[at:], uint32(l))
	}
	return b, true
}
