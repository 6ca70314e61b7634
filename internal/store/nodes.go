package store

import (
	"context"
	"time"
)

// Nodes: each running node (a `mailroom serve` process) keeps a row in
// nodes with a heartbeat written every few seconds. Heartbeats are written
// and judged by the database's clock, so nodes whose clocks disagree (or a
// test's fake clock) never take each other for dead.

// nowMillisSQL is the database clock in Unix milliseconds.
func (db *DB) nowMillisSQL() string {
	if db.Dialect == Postgres {
		return `(extract(epoch from clock_timestamp()) * 1000)::bigint`
	}
	return `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`
}

// Beat records that node id is alive. created reports that its row was
// missing: the node's first beat, or another node gave it up for dead.
func (db *DB) Beat(ctx context.Context, id, host string, pid int) (created bool, err error) {
	now := db.nowMillisSQL()
	res, err := db.Exec(ctx, `UPDATE nodes SET heartbeat_at = `+now+` WHERE id = ?`, id)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return false, nil
	}
	_, err = db.Exec(ctx, `INSERT INTO nodes (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, `+now+`, `+now+`)`, id, host, pid)
	return true, err
}

// StaleNodes lists the nodes whose last heartbeat is older than after.
func (db *DB) StaleNodes(ctx context.Context, after time.Duration) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT id FROM nodes WHERE heartbeat_at < `+db.nowMillisSQL()+` - ?`, after.Milliseconds())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// GiveUpNode deletes node id's row if its heartbeat is still older than
// after, and reports whether it did: of several nodes that find it stale
// at once, one alone takes up its work.
func (tx *Tx) GiveUpNode(ctx context.Context, id string, after time.Duration) (bool, error) {
	return Changed(tx.Exec(ctx, `DELETE FROM nodes WHERE id = ? AND heartbeat_at < `+tx.db.nowMillisSQL()+` - ?`, id, after.Milliseconds()))
}

// OtherNodes deletes every node row but self's and returns their ids: the
// owner of a SQLite database (see LockSQLite) knows them all dead.
func (tx *Tx) OtherNodes(ctx context.Context, self string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM nodes WHERE id <> ?`, self)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `DELETE FROM nodes WHERE id <> ?`, self)
	return ids, err
}

// DeleteNode removes node id's row (a clean stop: nothing is left to take up).
func (db *DB) DeleteNode(ctx context.Context, id string) error {
	_, err := db.Exec(ctx, `DELETE FROM nodes WHERE id = ?`, id)
	return err
}

// EnsureSetting stores value under name unless a value is stored already,
// and returns the stored one: the first node to start decides.
func (db *DB) EnsureSetting(ctx context.Context, name, value string) (string, error) {
	if _, err := db.Exec(ctx, `INSERT INTO cluster_settings (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
		name, value, Millis(time.Now())); err != nil {
		return "", err
	}
	return db.Setting(ctx, name)
}

// Setting reads the value stored under name.
func (db *DB) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := db.QueryRow(ctx, `SELECT value FROM cluster_settings WHERE name = ?`, name).Scan(&v)
	return v, err
}
