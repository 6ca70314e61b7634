package jobs

// The statements this package runs on River's own tables (River owns the
// schema; these read and repair it).

import (
	"context"

	"mailroom/internal/store"
)

// RescueRunning makes the jobs left running by a node that is gone
// available again at once (discarded when they have no attempt left, as
// River's own rescuer does), instead of waiting for River's stuck-job rescue
// (RescueAfter) after a crash. client names the node (its River client id,
// which River appends to a job's attempted_by when it fetches it); empty
// means every running job, for the owner of a SQLite database at start. It
// also drops the node's River leadership, so that another node's scheduler
// (due scheduled sends and retries) takes over without waiting out the
// leader's lease.
func RescueRunning(ctx context.Context, tx *store.Tx, client, reason string) (int64, error) {
	q := rescueSQL(tx.Dialect())
	args := []any{reason}
	leader := `DELETE FROM river_leader`
	if client != "" {
		q += ` AND ` + lastAttemptedBy(tx.Dialect()) + ` = ?`
		args = append(args, client)
		leader += ` WHERE leader_id = ?`
	}
	res, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if client != "" {
		_, err = tx.Exec(ctx, leader, client)
	} else {
		_, err = tx.Exec(ctx, leader)
	}
	return n, err
}

// rescueSQL records the rescue among the job's errors as River does (an
// AttemptError object), and re-checks state so a job that finished
// meanwhile is left alone.
func rescueSQL(d store.Dialect) string {
	if d == store.Postgres {
		return `UPDATE river_job SET
			state = CASE WHEN attempt >= max_attempts THEN 'discarded'::river_job_state ELSE 'available'::river_job_state END,
			finalized_at = CASE WHEN attempt >= max_attempts THEN now() END,
			errors = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt, 'error', ?::text, 'trace', ''))
			WHERE state = 'running'`
	}
	// River's SQLite driver compares times as text in datetime()'s format.
	return `UPDATE river_job SET
		state = CASE WHEN attempt >= max_attempts THEN 'discarded' ELSE 'available' END,
		finalized_at = CASE WHEN attempt >= max_attempts THEN datetime('now', 'subsec') END,
		errors = json_insert(coalesce(errors, json('[]')), '$[#]', json_object('at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'attempt', attempt, 'error', ?, 'trace', ''))
		WHERE state = 'running'`
}

// lastAttemptedBy is the client that fetched the job last (text[] on
// PostgreSQL, a JSON array on SQLite).
func lastAttemptedBy(d store.Dialect) string {
	if d == store.Postgres {
		return `attempted_by[array_length(attempted_by, 1)]`
	}
	return `json_extract(attempted_by, '$[#-1]')`
}

// Depth counts jobs waiting to run (available, scheduled or retrying).
func (q *Queue) Depth(ctx context.Context) (int64, error) {
	var n int64
	err := q.db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state IN ('available','scheduled','retryable')`).Scan(&n)
	return n, err
}

// Lane is one queue's backlog: jobs waiting (available, scheduled or
// retrying) and how long the oldest job that is due has waited past its
// time.
type Lane struct {
	Queue       string
	Waiting     int64
	OldestDueAt float64 // seconds; 0 when nothing is due
}

// Lanes reads the backlog of every queue that has one.
func (q *Queue) Lanes(ctx context.Context) ([]Lane, error) {
	// River's SQLite driver keeps times as text in datetime()'s format.
	age := `(julianday('now') - julianday(min(CASE WHEN state <> 'scheduled' AND scheduled_at <= datetime('now', 'subsec') THEN scheduled_at END))) * 86400`
	if q.db.Dialect == store.Postgres {
		age = `extract(epoch FROM now() - min(CASE WHEN state <> 'scheduled' AND scheduled_at <= now() THEN scheduled_at END))`
	}
	rows, err := q.db.Query(ctx, `SELECT queue, count(*), coalesce(`+age+`, 0) FROM river_job
		WHERE state IN ('available','scheduled','retryable') GROUP BY queue`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Lane
	for rows.Next() {
		var l Lane
		if err := rows.Scan(&l.Queue, &l.Waiting, &l.OldestDueAt); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
