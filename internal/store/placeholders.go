package store

import (
	"strconv"
	"strings"
)

// Rebind turns ? placeholders into the dialect's form.
func (db *DB) Rebind(q string) string {
	if db.Dialect != Postgres {
		return q
	}
	if v, ok := db.rebinds.Load(q); ok {
		return v.(string)
	}
	r := rebind(q)
	db.rebinds.Store(q, r)
	return r
}

func rebind(q string) string { return rebindFrom(q, 0) }

// rebindFrom numbers q's placeholders from n+1, for a query joined to
// another one's parameters.
func rebindFrom(q string, n int) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	inQuote := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == '\'' {
			inQuote = !inQuote
		}
		if c == '?' && !inQuote {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// PaddedIn appends vals (at least one) to args as an IN list padded to the
// next power of two by repeating the last value, which changes nothing in
// an IN list, and returns its placeholders. A query built this way takes
// one of a few forms, each prepared once, where one form per length filled
// the bounded statement caches (and SQLite's keeps what it first saw).
func PaddedIn[T any](args []any, vals []T) ([]any, string) {
	n := 1
	for n < len(vals) {
		n *= 2
	}
	for i := range n {
		args = append(args, vals[min(i, len(vals)-1)])
	}
	return args, Placeholders(n)
}

// Placeholders is "?,?,...,?" with n marks, for an IN list of n values.
func Placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// BoolInt is b as the 0 or 1 both dialects store flags as.
func BoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
