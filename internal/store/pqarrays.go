package store

import (
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/lib/pq"
)

// River's database/sql driver passes its array parameters as lib/pq's
// arrays (pq.Array), which are driver.Valuers answering a text literal.
// pgx cannot put a string into an array parameter in binary, so for each
// one it built an error (formatting the whole value with %#v), parsed the
// literal back into Go values and encoded those, on the commit that every
// send of a batch waits for. unwrapPQArray hands pgx the slice
// inside instead, which it encodes in binary at once: the same values,
// without the round trip through text. A value it does not know still goes
// the old way.
func unwrapPQArray(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	inside, ok := pqArrayInside(value)
	if !ok || inside == nil {
		return nil, nil, false
	}
	return &pqArrayPlan{}, inside, true
}

// pqArrayInside answers the slice a lib/pq array wraps (nil for a nil
// pointer), and whether value is one. pq.Array answers pointers to the
// typed arrays, and GenericArray for other slices (River's []time.Time and
// []int16).
func pqArrayInside(value any) (any, bool) {
	switch v := value.(type) {
	case *pq.StringArray:
		return deref(v, func(a pq.StringArray) any { return []string(a) }), true
	case *pq.Int64Array:
		return deref(v, func(a pq.Int64Array) any { return []int64(a) }), true
	case *pq.Int32Array:
		return deref(v, func(a pq.Int32Array) any { return []int32(a) }), true
	case *pq.ByteaArray:
		return deref(v, func(a pq.ByteaArray) any { return [][]byte(a) }), true
	case *pq.BoolArray:
		return deref(v, func(a pq.BoolArray) any { return []bool(a) }), true
	case *pq.Float64Array:
		return deref(v, func(a pq.Float64Array) any { return []float64(a) }), true
	case pq.StringArray:
		return []string(v), true
	case pq.Int64Array:
		return []int64(v), true
	case pq.Int32Array:
		return []int32(v), true
	case pq.ByteaArray:
		return [][]byte(v), true
	case pq.GenericArray:
		return v.A, true
	}
	return nil, false
}

func deref[T any](p *T, inside func(T) any) any {
	if p == nil {
		return nil
	}
	return inside(*p)
}

// pqArrayPlan encodes a lib/pq array as the slice it wraps. pgx keeps a
// plan per Go type and hands it each new value of that type.
type pqArrayPlan struct{ next pgtype.EncodePlan }

func (p *pqArrayPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *pqArrayPlan) Encode(value any, buf []byte) ([]byte, error) {
	inside, _ := pqArrayInside(value)
	if inside == nil {
		return nil, nil // NULL, as the array's own Value answers
	}
	return p.next.Encode(inside, buf)
}
