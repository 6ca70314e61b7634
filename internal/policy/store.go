package policy

// All SQL of the policy area: policy_counters, policy_holds, policy_version
// (migration 00034) and ips (00035).

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"mailroom/internal/store"
)

// readCounter is the sends a counter row holds (0 when there is none).
func readCounter(ctx context.Context, db *store.DB, k ckey) (int64, error) {
	var n int64
	err := db.QueryRow(ctx, `SELECT sends FROM policy_counters WHERE workspace_id = ? AND subject = ? AND period = ?`,
		k.ws, k.subject, k.period).Scan(&n)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	return n, err
}

// addCounter adds d to a counter row and answers its sends after the add.
func addCounter(ctx context.Context, tx *store.Tx, k ckey, d counts) (int64, error) {
	var n int64
	err := tx.QueryRow(ctx, `INSERT INTO policy_counters (workspace_id, subject, period, sends, bounces, complaints) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (workspace_id, subject, period) DO UPDATE SET sends = policy_counters.sends + excluded.sends,
			bounces = policy_counters.bounces + excluded.bounces, complaints = policy_counters.complaints + excluded.complaints
		RETURNING sends`, k.ws, k.subject, k.period, d.sends, d.bounces, d.complaints).Scan(&n)
	return n, err
}

// sumCounters adds up a workspace's own rows (subject ”) over periods.
func sumCounters(ctx context.Context, db *store.DB, ws string, periods []string) (counts, error) {
	var c counts
	in, args := inPeriods(ws, periods)
	err := db.QueryRow(ctx, `SELECT COALESCE(SUM(sends), 0), COALESCE(SUM(bounces), 0), COALESCE(SUM(complaints), 0) FROM policy_counters
		WHERE workspace_id = ? AND subject = '' AND `+in, args...).Scan(&c.sends, &c.bounces, &c.complaints)
	return c, err
}

// inPeriods is the condition "period IN (…)" and the arguments, the
// workspace first, of a read over a workspace's periods.
func inPeriods(ws string, periods []string) (string, []any) {
	args := make([]any, 0, len(periods)+1)
	args = append(args, ws)
	for _, p := range periods {
		args = append(args, p)
	}
	return "period IN (?" + strings.Repeat(", ?", len(periods)-1) + ")", args
}

// busiestDays answers, for each counter subject of a workspace, its most
// sends in one of the day periods (the cold-sending throttle's history).
func busiestDays(ctx context.Context, db *store.DB, ws string, periods []string) (map[string]int64, error) {
	type row struct {
		subject string
		n       int64
	}
	in, args := inPeriods(ws, periods)
	rows, err := store.QueryAll(ctx, db, func(r store.Scanner) (row, error) {
		var x row
		return x, r.Scan(&x.subject, &x.n)
	}, `SELECT subject, MAX(sends) FROM policy_counters WHERE workspace_id = ? AND `+in+` GROUP BY subject`, args...)
	out := make(map[string]int64, len(rows))
	for _, x := range rows {
		out[x.subject] = x.n
	}
	return out, err
}

// readVersion is policy_version's one figure.
func readVersion(ctx context.Context, db *store.DB) (int64, error) {
	var v int64
	err := db.QueryRow(ctx, `SELECT version FROM policy_version WHERE id = 1`).Scan(&v)
	return v, err
}

// readHolds lists every hold.
func readHolds(ctx context.Context, db *store.DB) ([]Hold, error) {
	return store.QueryAll(ctx, db, func(r store.Scanner) (Hold, error) {
		var h Hold
		var at int64
		err := r.Scan(&h.WorkspaceID, &h.Kind, &h.Value, &h.Reason, &at)
		h.CreatedAt = store.FromMillis(at)
		return h, err
	}, `SELECT workspace_id, kind, value, reason, created_at FROM policy_holds`)
}

// putHold stores h unless the same hold exists; it answers whether it was
// added, and moves policy_version when it was.
func putHold(ctx context.Context, tx *store.Tx, h Hold) (bool, error) {
	res, err := tx.Exec(ctx, `INSERT INTO policy_holds (workspace_id, kind, value, reason, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (workspace_id, kind, value) DO NOTHING`, h.WorkspaceID, h.Kind, h.Value, h.Reason, store.Millis(h.CreatedAt))
	if err != nil {
		return false, err
	}
	return bumpIf(ctx, tx, res)
}

// dropHold removes a hold; it answers whether there was one.
func dropHold(ctx context.Context, tx *store.Tx, ws, kind, value string) (bool, error) {
	res, err := tx.Exec(ctx, `DELETE FROM policy_holds WHERE workspace_id = ? AND kind = ? AND value = ?`, ws, kind, value)
	if err != nil {
		return false, err
	}
	return bumpIf(ctx, tx, res)
}

type rowsAffected interface{ RowsAffected() (int64, error) }

func bumpIf(ctx context.Context, tx *store.Tx, res rowsAffected) (bool, error) {
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	_, err := tx.Exec(ctx, `UPDATE policy_version SET version = version + 1 WHERE id = 1`)
	return err == nil, err
}

// forgetOutcomes clears a workspace's counted bounces and complaints (a
// resume), keeping its sends (the quotas count them).
func forgetOutcomes(ctx context.Context, tx *store.Tx, ws string) error {
	_, err := tx.Exec(ctx, `UPDATE policy_counters SET bounces = 0, complaints = 0 WHERE workspace_id = ? AND subject = ''`, ws)
	return err
}

const ipColumns = `id, workspace_id, ip, paused, daily_cap, created_at`

func scanIP(r store.Scanner) (IP, error) {
	var x IP
	var paused int
	var cp sql.NullInt64
	var at int64
	err := r.Scan(&x.ID, &x.WorkspaceID, &x.IP, &paused, &cp, &at)
	x.Paused, x.CreatedAt = paused == 1, store.FromMillis(at)
	if cp.Valid {
		x.DailyCap = &cp.Int64
	}
	return x, err
}

// listIPs lists a workspace's dedicated IPs, oldest first.
func listIPs(ctx context.Context, db *store.DB, ws string) ([]IP, error) {
	return store.QueryAll(ctx, db, scanIP, `SELECT `+ipColumns+` FROM ips WHERE workspace_id = ? ORDER BY created_at, id`, ws)
}

// takenIPs lists every address taken by any workspace.
func takenIPs(ctx context.Context, db *store.DB) ([]string, error) {
	return store.QueryAll(ctx, db, func(r store.Scanner) (string, error) {
		var s string
		return s, r.Scan(&s)
	}, `SELECT ip FROM ips`)
}

// getIP reads one of a workspace's IPs (store.ErrNotFound when absent).
func getIP(ctx context.Context, q store.Querier, ws, id string) (IP, error) {
	return scanIP(q.QueryRow(ctx, `SELECT `+ipColumns+` FROM ips WHERE workspace_id = ? AND id = ?`, ws, id))
}

// ipByAddr reads the row holding address ip (store.ErrNotFound when free).
func ipByAddr(ctx context.Context, tx *store.Tx, ip string) (IP, error) {
	return scanIP(tx.QueryRow(ctx, `SELECT `+ipColumns+` FROM ips WHERE ip = ?`, ip))
}

// insertIP stores a taken IP.
func insertIP(ctx context.Context, tx *store.Tx, x IP) error {
	_, err := tx.Exec(ctx, `INSERT INTO ips (`+ipColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		x.ID, x.WorkspaceID, x.IP, store.BoolInt(x.Paused), store.OrNull(x.DailyCap), store.Millis(x.CreatedAt))
	return err
}

// updateIP writes paused and daily_cap.
func updateIP(ctx context.Context, db *store.DB, x IP) error {
	_, err := db.Exec(ctx, `UPDATE ips SET paused = ?, daily_cap = ? WHERE workspace_id = ? AND id = ?`,
		store.BoolInt(x.Paused), store.OrNull(x.DailyCap), x.WorkspaceID, x.ID)
	return err
}

// deleteIP hands an IP back; it answers whether the workspace had it.
func deleteIP(ctx context.Context, db *store.DB, ws, id string) (bool, error) {
	return store.Changed(db.Exec(ctx, `DELETE FROM ips WHERE workspace_id = ? AND id = ?`, ws, id))
}
