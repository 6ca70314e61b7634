package store

import "context"

// Test access to the direct PostgreSQL path (pgdirect.go).
var ErrNoDirect = errNoDirect

func (db *DB) QueryDirect(ctx context.Context, q string, args []any, row func(vals [][]byte) error) error {
	return db.queryDirect(ctx, q, args, row)
}

func (db *DB) DirectRuns() uint64 { return db.direct.Load() }

// IsPQArrayPlan reports whether pgx encodes through unwrapPQArray's plan.
func IsPQArrayPlan(plan any) bool { _, ok := plan.(*pqArrayPlan); return ok }

// CommonHits is how many rows make a word common to TextSearch.
const CommonHits = commonHits

// NewPageSize is the page size a new SQLite database is created with.
const NewPageSize = newPageSize
