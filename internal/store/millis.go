package store

import (
	"database/sql"
	"time"
)

// Millis converts a time to the stored form (unix milliseconds).
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis converts the stored form back to UTC time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// MillisOrNull converts an optional time to the stored form: NULL when nil.
func MillisOrNull(t *time.Time) any {
	if t == nil {
		return nil
	}
	return Millis(*t)
}

// OrNull is what p points to, or NULL when p is nil, for an optional
// column.
func OrNull[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TextOrNull is s, or NULL when s is empty, for an optional text column.
func TextOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// NullMillis converts a nullable stored time.
func NullMillis(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := FromMillis(v.Int64)
	return &t
}
