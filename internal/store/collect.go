package store

import "context"

// Scanner is a row to scan: *sql.Rows, or the *Row of a single-row read.
type Scanner interface{ Scan(dest ...any) error }

// QueryAll runs a query and scans every row with scan, so a list read is one
// call instead of its own Next/Scan/Close/Err loop.
func QueryAll[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
