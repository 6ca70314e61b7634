package store

import (
	"database/sql"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
)

// Each real difference between the dialects that a service needs is named
// here once, so services write one query and never test the dialect.

// ForUpdate is the clause that ends a SELECT whose rows the transaction
// must hold until it commits: " FOR UPDATE" on PostgreSQL, nothing on
// SQLite, where the one writer's transaction already excludes every other.
func (db *DB) ForUpdate() string {
	if db.Dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// SkipLocked is the clause that ends a SELECT claiming rows for one worker
// among several: " FOR UPDATE SKIP LOCKED" on PostgreSQL, so concurrent
// claimers take different rows without waiting; nothing on SQLite, whose
// single writer claims alone (as River's riversqlite JobGetAvailable).
// The claiming statement must still re-check its condition outside the
// subquery: after a lock wait PostgreSQL sees the row's newest version.
func (db *DB) SkipLocked() string {
	if db.Dialect == Postgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// ConcurrentCommits reports whether two transactions can commit at once:
// PostgreSQL's pool can run a second commit while one is in flight; SQLite
// has one writer connection, so a second would only queue behind the first.
func (db *DB) ConcurrentCommits() bool { return db.Dialect == Postgres }

// ForUpdate is the database's ForUpdate, for a query built inside tx.
func (tx *Tx) ForUpdate() string { return tx.db.ForUpdate() }

// SkipLocked is the database's SkipLocked, for a query built inside tx.
func (tx *Tx) SkipLocked() string { return tx.db.SkipLocked() }

// QueueDriver is the River driver over the writer pool: riverdatabasesql on
// PostgreSQL (the store speaks database/sql in both dialects and River must
// share its transactions), riversqlite on SQLite.
func (db *DB) QueueDriver() riverdriver.Driver[*sql.Tx] {
	if db.Dialect == Postgres {
		return riverdatabasesql.New(db.W)
	}
	return riversqlite.New(db.W)
}
