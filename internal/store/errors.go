package store

import (
	"database/sql"
	"errors"
	"strings"
)

// ErrNotFound is returned by store lookups that find no row (Row.Scan maps
// sql.ErrNoRows to it, and to nothing else); services turn it into the
// spec's not_found for their resource.
var ErrNotFound = errors.New("store: not found")

// IsUniqueViolation reports whether err is a unique-constraint failure in
// either dialect.
func IsUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "SQLSTATE 23505") || strings.Contains(s, "duplicate key value")
}

// IsForeignKeyViolation reports whether err is a foreign-key failure in
// either dialect.
func IsForeignKeyViolation(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "FOREIGN KEY constraint failed") || strings.Contains(s, "SQLSTATE 23503")
}

// IsDeadlock reports whether PostgreSQL chose the transaction as a deadlock
// victim (or could not serialize it): the transaction was rolled back whole
// and may simply run again. SQLite's one writer never deadlocks.
func IsDeadlock(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "SQLSTATE 40P01") || strings.Contains(s, "SQLSTATE 40001")
}

// Changed reports whether an Exec's statement touched a row, passing its
// error through: the shape of every "update or delete if still so".
func Changed(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
