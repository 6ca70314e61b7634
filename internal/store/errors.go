package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
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

// IsDiskFull reports whether the database refused a write for lack of
// space: SQLite's SQLITE_FULL ("database or disk is full") or PostgreSQL's
// disk_full (SQLSTATE 53100). The write did not happen; it may succeed once
// space is freed.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "database or disk is full") || strings.Contains(s, "SQLSTATE 53100") || strings.Contains(s, "No space left on device")
}

// IsUnavailable reports whether err says the database could not be reached
// or is going away (refused or dropped connections, PostgreSQL shutting
// down or starting: SQLSTATE 57P01-57P03, class 08), rather than that the
// statement was wrong: the same request may succeed shortly.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	s := err.Error()
	for _, m := range []string{"sql: database is closed", "failed to connect to", "SQLSTATE 57P0", "SQLSTATE 08", "connection refused",
		"failed to receive message", "failed to write", "conn closed", "unexpected EOF"} { // pgconn's words for a connection lost mid-statement
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
