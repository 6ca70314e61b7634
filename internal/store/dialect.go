package store

import (
	"context"
	"database/sql"
	"strings"

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

// RefreshStatistics has PostgreSQL re-read the size and value spread of
// tables (ANALYZE) after a bulk write, so the planner does not keep a small
// table's plans; nothing on SQLite, whose planner reads no statistics we
// keep.
func (db *DB) RefreshStatistics(ctx context.Context, tables ...string) error {
	if db.Dialect != Postgres || len(tables) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `ANALYZE `+strings.Join(tables, ", "))
	return err
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

// MinIndexedTerm is the shortest term, in characters, a trigram index can
// serve: a shorter one holds no trigram.
const MinIndexedTerm = 3

// ContainsIndexed is a FROM item, with its arguments, holding the rows of
// table (every column, aliased by the caller) whose text column contains
// term, exactly as HasSubstring says, found through the column's trigram index
// rather than by testing each row. The migrations create that index under
// one name in both dialects, <table>_<column>: an FTS5 table (tokenize
// 'trigram case_sensitive 1', external content keyed by rowid) on SQLite,
// a pg_trgm GIN index on PostgreSQL. term must have at least
// MinIndexedTerm characters (a shorter one holds no trigram; use
// HasSubstring).
// Reading it costs in proportion to the matches in the whole table, so a
// caller wanting the first rows of an order many rows match is better off
// scanning that order with HasSubstring.
func (db *DB) ContainsIndexed(table, column, term string) (string, []any) {
	if db.Dialect == Postgres {
		// A materialized CTE is planned for all its rows, so the planner
		// reads it through the GIN index even in a prepared statement's
		// generic plan (LIKE $1 of unknown selectivity), where a subquery
		// under the caller's LIMIT was planned as a sequential scan.
		return `(WITH m AS MATERIALIZED (SELECT * FROM ` + table + ` WHERE ` + column + ` LIKE ?) SELECT * FROM m)`,
			[]any{"%" + likeEscaper.Replace(term) + "%"}
	}
	// The FTS5 table yields the candidates by their trigrams, and CROSS
	// JOIN makes it the outer loop (the planner would otherwise scan the
	// table in the caller's order and look each row up). The phrase is the
	// term as one quoted string, so nothing in it is an operator; instr
	// re-checks each candidate, which keeps the answer Contains's.
	fts := table + "_" + column
	phrase := `"` + strings.ReplaceAll(term, `"`, `""`) + `"`
	return `(SELECT ` + table + `.* FROM ` + fts + ` CROSS JOIN ` + table + ` ON ` + table + `.rowid = ` + fts + `.rowid
		WHERE ` + fts + ` MATCH ? AND instr(` + table + `.` + column + `, ?) > 0)`, []any{phrase, term}
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// The expressions below serve the segment rules (internal/rules), which
// compile to one query for both dialects. An Expr is SQL with ?
// placeholders and their arguments in order, so a method that uses an
// expression twice repeats its arguments too; no value is ever spliced.

// Expr is a piece of SQL and the arguments of its placeholders.
type Expr struct {
	SQL  string
	Args []any
}

// Cat joins pieces: a string is raw SQL, an Expr brings its arguments.
func Cat(parts ...any) Expr {
	var e Expr
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			e.SQL += v
		case Expr:
			e.SQL += v.SQL
			e.Args = append(e.Args, v.Args...)
		}
	}
	return e
}

// Val is one bound value.
func Val(v any) Expr { return Expr{SQL: "?", Args: []any{v}} }

// Let gives f the value of x, an expression it may read several times.
// SQLite computes x once per row in a scalar subquery over a one-row
// derived table (a JSON value is then parsed once: a 5-rule count over
// 100,000 members took a fifth less). PostgreSQL gets x itself: its
// subplan per row and rule cost more than reading the value again (the
// same count took 160-180 ms inline against 240-320 ms, EXPLAIN ANALYZE,
// docs/performance.md).
func (db *DB) Let(x Expr, f func(v Expr) Expr) Expr {
	if db.Dialect == Postgres {
		return f(x)
	}
	return Cat("(SELECT ", f(Expr{SQL: "l.v"}), " FROM (SELECT ", x, " AS v) l)")
}

// JSONText is the text value of key in the JSON object held as text in
// column col, NULL when the key is absent. PostgreSQL reads it with ->>,
// after a cast to json since the column is TEXT in both dialects (json,
// not jsonb: for one lookup the binary conversion costs more than it
// saves; measured, a count over 100,000 contacts took a third less). SQLite
// reads it with json_extract and a quoted path, itself a bound value; a key
// holding a quote or a backslash, which a path cannot spell, is looked up
// with json_each instead (a bound key, but several times slower).
func (db *DB) JSONText(col, key string) Expr {
	if db.Dialect == Postgres {
		return Cat("((", col, ")::json ->> CAST(", Val(key), " AS TEXT))")
	}
	if !strings.ContainsAny(key, `"\`) {
		return Cat("json_extract(", col, ", ", Val(`$."`+key+`"`), ")")
	}
	return Cat("(SELECT value FROM json_each(", col, ") WHERE key = ", Val(key), ")")
}

// JSONArrayHas is true when the JSON array of strings held as text in col
// contains value: json_each on SQLite, jsonb_exists (the ? operator,
// which would read as a placeholder) on PostgreSQL.
func (db *DB) JSONArrayHas(col, value string) Expr {
	if db.Dialect == Postgres {
		return Cat("jsonb_exists((", col, ")::jsonb, CAST(", Val(value), " AS TEXT))")
	}
	return Cat("EXISTS (SELECT 1 FROM json_each(", col, ") WHERE value = ", Val(value), ")")
}

// HasSubstring is true when text x holds needle as a plain substring, case
// sensitive (%, _, quotes and FTS operators are literal): instr on SQLite,
// strpos on PostgreSQL (LIKE would need its wildcards escaped, and
// SQLite's LIKE ignores ASCII case). No index serves it: it tests each row
// the query visits; ContainsIndexed finds the rows through an index.
func (db *DB) HasSubstring(x Expr, needle string) Expr {
	if db.Dialect == Postgres {
		return Cat("(strpos(", x, ", CAST(", Val(needle), " AS TEXT)) > 0)")
	}
	return Cat("(instr(", x, ", ", Val(needle), ") > 0)")
}

// IsDecimal is true when text x is a decimal number as the rules read
// one: an optional minus, digits, and optionally a point and digits. A
// regular expression on PostgreSQL; GLOB patterns on SQLite, which has no
// regular expressions built in.
func (db *DB) IsDecimal(x Expr) Expr {
	if db.Dialect == Postgres {
		return Cat("(", x, " ~ '^-?[0-9]+(\\.[0-9]+)?$')")
	}
	// Without its minus the text starts and ends with a digit and holds
	// only digits and at most one point.
	u := Cat("(CASE WHEN substr(", x, ", 1, 1) = '-' THEN substr(", x, ", 2) ELSE ", x, " END)")
	return Cat("(", u, " GLOB '[0-9]*' AND ", u, " GLOB '*[0-9]' AND ", u, " NOT GLOB '*[^0-9.]*' AND ", u, " NOT GLOB '*.*.*')")
}

// Real casts text x (a decimal, see IsDecimal) to a floating-point number.
func (db *DB) Real(x Expr) Expr {
	if db.Dialect == Postgres {
		return Cat("CAST(", x, " AS DOUBLE PRECISION)")
	}
	return Cat("CAST(", x, " AS REAL)")
}

// Bytewise is the collation that orders text by its bytes, as Go compares
// strings: BINARY on SQLite (its default), "C" on PostgreSQL, whose
// database collation may follow a locale.
func (db *DB) Bytewise() string {
	if db.Dialect == Postgres {
		return ` COLLATE "C"`
	}
	return " COLLATE BINARY"
}
