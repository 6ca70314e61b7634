package automations

import (
	"context"
	"database/sql"
	"time"

	"mailroom/internal/store"
)

// This file holds every statement on the automations and
// automation_versions tables; the package is their only reader and writer.

const autoColumns = `id, workspace_id, name, slug, trigger_event, trigger_tag, trigger_audience_id, enabled, version, yaml, last_error, created_at, updated_at`

func scanAutomation(sc store.Scanner) (Automation, error) {
	var a Automation
	var enabled int
	var lastErr sql.NullString
	var created, updated int64
	err := sc.Scan(&a.ID, &a.WorkspaceID, &a.Name, &a.Slug, &a.Trigger, &a.TriggerTag, &a.TriggerAudienceID,
		&enabled, &a.Version, &a.YAML, &lastErr, &created, &updated)
	a.Enabled = enabled == 1
	if lastErr.Valid {
		a.LastError = &lastErr.String
	}
	a.CreatedAt, a.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return a, err
}

// automationByRef reads a live automation of the workspace by id or slug;
// store.ErrNotFound when there is none.
func automationByRef(ctx context.Context, q store.Querier, workspaceID, ref string) (Automation, error) {
	return scanAutomation(q.QueryRow(ctx, `SELECT `+autoColumns+` FROM automations
		WHERE workspace_id = ? AND (id = ? OR slug = ?) AND deleted_at IS NULL
		ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1`, workspaceID, ref, ref, ref))
}

// listAutomations reads the workspace's live automations, newest first.
func listAutomations(ctx context.Context, q store.Querier, workspaceID string, limit int) ([]Automation, error) {
	return store.QueryAll(ctx, q, scanAutomation, `SELECT `+autoColumns+` FROM automations
		WHERE workspace_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ?`, workspaceID, limit)
}

// slugTaken says whether a live automation of the workspace has the slug.
func slugTaken(ctx context.Context, q store.Querier, workspaceID, slug string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM automations WHERE workspace_id = ? AND slug = ? AND deleted_at IS NULL`,
		workspaceID, slug).Scan(&n)
	return n > 0, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func insertAutomation(ctx context.Context, tx *store.Tx, a Automation) error {
	_, err := tx.Exec(ctx, `INSERT INTO automations (id, workspace_id, name, slug, trigger_event, trigger_tag, trigger_audience_id,
		enabled, version, yaml, last_error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
		a.ID, a.WorkspaceID, a.Name, a.Slug, a.Trigger, a.TriggerTag, a.TriggerAudienceID, boolInt(a.Enabled), a.Version, a.YAML,
		store.Millis(a.CreatedAt), store.Millis(a.UpdatedAt))
	return err
}

func insertVersion(ctx context.Context, tx *store.Tx, v Version, automationID, workspaceID string) error {
	_, err := tx.Exec(ctx, `INSERT INTO automation_versions (id, automation_id, workspace_id, version, yaml, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, v.ID, automationID, workspaceID, v.Version, v.YAML, store.Millis(v.CreatedAt))
	return err
}

// bumpVersion makes yaml the automation's current definition and returns
// the new version number. Incrementing version first takes the row's lock,
// so concurrent writers get distinct numbers in turn.
func bumpVersion(ctx context.Context, tx *store.Tx, workspaceID, id string, def Definition, yaml string, now time.Time) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `UPDATE automations SET version = version + 1, name = ?, trigger_event = ?, trigger_tag = ?,
		trigger_audience_id = ?, yaml = ?, updated_at = ? WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL RETURNING version`,
		def.Name, def.Trigger.Event, def.Trigger.Tag, def.Trigger.AudienceID, yaml, store.Millis(now), id, workspaceID).Scan(&n)
	return n, err
}

func setEnabled(ctx context.Context, tx *store.Tx, workspaceID, id string, enabled bool, now time.Time) error {
	res, err := tx.Exec(ctx, `UPDATE automations SET enabled = ?, updated_at = ? WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL`,
		boolInt(enabled), store.Millis(now), id, workspaceID)
	return affected(res, err)
}

func softDelete(ctx context.Context, tx *store.Tx, workspaceID, id string, now time.Time) error {
	res, err := tx.Exec(ctx, `UPDATE automations SET deleted_at = ?, enabled = 0 WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL`,
		store.Millis(now), id, workspaceID)
	return affected(res, err)
}

func affected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

func scanVersion(sc store.Scanner) (Version, error) {
	var v Version
	var created int64
	err := sc.Scan(&v.ID, &v.Version, &v.YAML, &created)
	v.CreatedAt = store.FromMillis(created)
	return v, err
}

// listVersions reads an automation's newest versions, newest first.
func listVersions(ctx context.Context, q store.Querier, workspaceID, automationID string, limit int) ([]Version, error) {
	return store.QueryAll(ctx, q, scanVersion, `SELECT id, version, yaml, created_at FROM automation_versions
		WHERE automation_id = ? AND workspace_id = ? ORDER BY version DESC LIMIT ?`, automationID, workspaceID, limit)
}

// versionByID reads one version of an automation; store.ErrNotFound when
// the id is not one of its versions.
func versionByID(ctx context.Context, q store.Querier, workspaceID, automationID, versionID string) (Version, error) {
	return scanVersion(q.QueryRow(ctx, `SELECT id, version, yaml, created_at FROM automation_versions
		WHERE id = ? AND automation_id = ? AND workspace_id = ?`, versionID, automationID, workspaceID))
}
