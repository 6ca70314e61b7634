package automations

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"mailroom/internal/store"
)

// This file holds every statement on the automations, automation_versions,
// automation_runs, automation_run_steps and custom_events tables; the package is their
// only reader and writer.

const autoColumns = `id, workspace_id, name, slug, trigger_event, trigger_tag, trigger_audience_id, enabled, version, yaml, last_error, created_at, updated_at, signing_secret`

func scanAutomation(sc store.Scanner) (Automation, error) {
	var a Automation
	var enabled int
	var lastErr sql.NullString
	var created, updated int64
	err := sc.Scan(&a.ID, &a.WorkspaceID, &a.Name, &a.Slug, &a.Trigger, &a.TriggerTag, &a.TriggerAudienceID,
		&enabled, &a.Version, &a.YAML, &lastErr, &created, &updated, &a.SigningSecret)
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

func insertAutomation(ctx context.Context, tx *store.Tx, a Automation) error {
	_, err := tx.Exec(ctx, `INSERT INTO automations (id, workspace_id, name, slug, trigger_event, trigger_tag, trigger_audience_id,
		enabled, version, yaml, last_error, created_at, updated_at, signing_secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`,
		a.ID, a.WorkspaceID, a.Name, a.Slug, a.Trigger, a.TriggerTag, a.TriggerAudienceID, store.BoolInt(a.Enabled), a.Version, a.YAML,
		store.Millis(a.CreatedAt), store.Millis(a.UpdatedAt), a.SigningSecret)
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
		store.BoolInt(enabled), store.Millis(now), id, workspaceID)
	return affected(res, err)
}

func softDelete(ctx context.Context, tx *store.Tx, workspaceID, id string, now time.Time) error {
	res, err := tx.Exec(ctx, `UPDATE automations SET deleted_at = ?, enabled = 0 WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL`,
		store.Millis(now), id, workspaceID)
	if err := affected(res, err); err != nil {
		return err
	}
	// Its unfinished runs end with it: a waiting run's timer, when it
	// fires, finds the run cancelled.
	if _, err := tx.Exec(ctx, `UPDATE automation_run_steps SET status = 'cancelled', finished_at = ?
		WHERE status = 'waiting' AND run_id IN (SELECT id FROM automation_runs WHERE automation_id = ? AND status = 'waiting')`,
		store.Millis(now), id); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE automation_runs SET status = 'cancelled', wait_until = NULL, updated_at = ?, finished_at = ?
		WHERE automation_id = ? AND status IN ('running', 'waiting')`, store.Millis(now), store.Millis(now), id)
	return err
}

func setLastError(ctx context.Context, tx *store.Tx, id, msg string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE automations SET last_error = ? WHERE id = ?`, msg, id)
	return err
}

// versionSource reads the YAML of one version and the automation's
// signing secret (deleted automations too: their runs are cancelled, but
// a worker may still be reading).
func versionSource(ctx context.Context, q store.Querier, automationID string, version int) (yaml, secret string, err error) {
	err = q.QueryRow(ctx, `SELECT v.yaml, a.signing_secret FROM automation_versions v JOIN automations a ON a.id = v.automation_id
		WHERE v.automation_id = ? AND v.version = ?`, automationID, version).Scan(&yaml, &secret)
	return yaml, secret, err
}

// enabledEventAutomations reads the workspace's live, enabled automations
// that start on a contact event.
func enabledEventAutomations(ctx context.Context, q store.Querier, workspaceID string) ([]Automation, error) {
	return store.QueryAll(ctx, q, scanAutomation, `SELECT `+autoColumns+` FROM automations
		WHERE workspace_id = ? AND deleted_at IS NULL AND enabled = 1 AND trigger_event <> 'api.call'`, workspaceID)
}

// ListenedEvents says which contact events some live, enabled automation
// of the workspace starts on (tag.added, contact.created, ...).
func ListenedEvents(ctx context.Context, q store.Querier, workspaceID string) (map[string]bool, error) {
	kinds, err := store.QueryAll(ctx, q, func(r store.Scanner) (string, error) {
		var k string
		return k, r.Scan(&k)
	}, `SELECT DISTINCT trigger_event FROM automations WHERE workspace_id = ? AND deleted_at IS NULL AND enabled = 1`, workspaceID)
	out := make(map[string]bool, len(kinds))
	for _, k := range kinds {
		out[k] = true
	}
	return out, err
}

// --- runs

const runColumns = `id, workspace_id, automation_id, version, contact_id, email, audience_id, status, trigger_key, trigger_data,
	pc, seq, emails_sent, error, wait_until, created_at, updated_at, finished_at`

var runInsertColumns = []string{"id", "workspace_id", "automation_id", "version", "contact_id", "email", "audience_id", "status",
	"trigger_key", "trigger_data", "pc", "seq", "emails_sent", "error", "wait_until", "created_at", "updated_at", "finished_at"}

func runArgs(r Run) []any {
	data, _ := json.Marshal(r.TriggerData)
	return []any{r.ID, r.WorkspaceID, r.AutomationID, r.Version, r.ContactID, r.Email, r.AudienceID, r.Status, r.TriggerKey, string(data),
		r.PC, r.Seq, r.EmailsSent, store.OrNull(r.Error), store.MillisOrNull(r.WaitUntil), store.Millis(r.CreatedAt), store.Millis(r.UpdatedAt), store.MillisOrNull(r.FinishedAt)}
}

func scanRun(sc store.Scanner) (Run, error) {
	var r Run
	var data string
	var errMsg sql.NullString
	var wait, finished sql.NullInt64
	var created, updated int64
	err := sc.Scan(&r.ID, &r.WorkspaceID, &r.AutomationID, &r.Version, &r.ContactID, &r.Email, &r.AudienceID, &r.Status, &r.TriggerKey, &data,
		&r.PC, &r.Seq, &r.EmailsSent, &errMsg, &wait, &created, &updated, &finished)
	if err != nil {
		return r, err
	}
	r.TriggerData = map[string]any{}
	_ = json.Unmarshal([]byte(data), &r.TriggerData)
	if errMsg.Valid {
		r.Error = &errMsg.String
	}
	r.WaitUntil, r.FinishedAt = store.NullMillis(wait), store.NullMillis(finished)
	r.CreatedAt, r.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return r, nil
}

func insertRun(ctx context.Context, tx *store.Tx, r Run) error {
	_, err := tx.Exec(ctx, `INSERT INTO automation_runs (`+runColumns+`) VALUES (`+store.Placeholders(len(runInsertColumns))+`)`, runArgs(r)...)
	return err
}

// deferRun queues a run for the transaction's multi-row insert (the
// consumer starts hundreds at once and reads none back).
func deferRun(tx *store.Tx, r Run) {
	tx.DeferInsert("automation_runs", runInsertColumns, runArgs(r)...)
}

func runByID(ctx context.Context, q store.Querier, workspaceID, id string) (Run, error) {
	return scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM automation_runs WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

func lockRun(ctx context.Context, tx *store.Tx, workspaceID, id string) (Run, error) {
	return scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM automation_runs WHERE id = ? AND workspace_id = ?`+tx.ForUpdate(), id, workspaceID))
}

func runIDByKey(ctx context.Context, q store.Querier, automationID, key string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT id FROM automation_runs WHERE automation_id = ? AND trigger_key = ?`, automationID, key).Scan(&id)
	return id, err
}

func updateRun(ctx context.Context, tx *store.Tx, r Run) error {
	_, err := tx.Exec(ctx, `UPDATE automation_runs SET status = ?, pc = ?, seq = ?, emails_sent = ?, error = ?, wait_until = ?,
		updated_at = ?, finished_at = ? WHERE id = ?`, r.Status, r.PC, r.Seq, r.EmailsSent, store.OrNull(r.Error), store.MillisOrNull(r.WaitUntil),
		store.Millis(r.UpdatedAt), store.MillisOrNull(r.FinishedAt), r.ID)
	return err
}

// listRuns reads an automation's runs, newest first.
func listRuns(ctx context.Context, q store.Querier, workspaceID, automationID, status string, before *Position, limit int) ([]Run, error) {
	where, args := `automation_id = ? AND workspace_id = ?`, []any{automationID, workspaceID}
	if status != "" {
		where += ` AND status = ?`
		args = append(args, status)
	}
	if before != nil {
		where += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, before.At, before.At, before.ID)
	}
	return store.QueryAll(ctx, q, scanRun, `SELECT `+runColumns+` FROM automation_runs
		WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit)...)
}

// --- steps

// insertStep records an executed step. (run_id, seq) is the primary key:
// a step recorded twice would fail the transaction that tried.
func insertStep(ctx context.Context, tx *store.Tx, workspaceID, runID string, st RunStep) error {
	_, err := tx.Exec(ctx, `INSERT INTO automation_run_steps (run_id, seq, workspace_id, step_id, type, status, outcome, email_id, error, started_at, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, runID, st.Seq, workspaceID, st.ID, st.Type, st.Status, st.Outcome,
		store.OrNull(st.EmailID), store.OrNull(st.Error), store.Millis(st.StartedAt), store.MillisOrNull(st.FinishedAt))
	return err
}

// closeWaitStep ends a run's wait step (completed when its timer fired,
// cancelled when the run was).
func closeWaitStep(ctx context.Context, tx *store.Tx, runID string, seq int, status string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE automation_run_steps SET status = ?, finished_at = ? WHERE run_id = ? AND seq = ? AND status = 'waiting'`,
		status, store.Millis(now), runID, seq)
	return err
}

// stepsOf reads the executed steps of runs, in order.
func stepsOf(ctx context.Context, q store.Querier, runIDs []string) (map[string][]RunStep, error) {
	args := make([]any, len(runIDs))
	for i, id := range runIDs {
		args[i] = id
	}
	rows, err := q.Query(ctx, `SELECT run_id, seq, step_id, type, status, outcome, email_id, error, started_at, finished_at
		FROM automation_run_steps WHERE run_id IN (`+store.Placeholders(len(runIDs))+`) ORDER BY run_id, seq`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]RunStep{}
	for rows.Next() {
		var runID string
		var st RunStep
		var email, errMsg sql.NullString
		var started int64
		var finished sql.NullInt64
		if err := rows.Scan(&runID, &st.Seq, &st.ID, &st.Type, &st.Status, &st.Outcome, &email, &errMsg, &started, &finished); err != nil {
			return nil, err
		}
		if email.Valid {
			st.EmailID = &email.String
		}
		if errMsg.Valid {
			st.Error = &errMsg.String
		}
		st.StartedAt, st.FinishedAt = store.FromMillis(started), store.NullMillis(finished)
		out[runID] = append(out[runID], st)
	}
	return out, rows.Err()
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

// --- custom events

const eventColumns = `id, workspace_id, name, schema, created_at, updated_at`

func scanEvent(sc store.Scanner) (Event, error) {
	var e Event
	var schema sql.NullString
	var created int64
	var updated sql.NullInt64
	if err := sc.Scan(&e.ID, &e.WorkspaceID, &e.Name, &schema, &created, &updated); err != nil {
		return e, err
	}
	if schema.Valid {
		if err := json.Unmarshal([]byte(schema.String), &e.Schema); err != nil {
			return e, err
		}
	}
	e.CreatedAt, e.UpdatedAt = store.FromMillis(created), store.NullMillis(updated)
	return e, nil
}

func schemaText(s map[string]string) any {
	if s == nil {
		return nil
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func insertEvent(ctx context.Context, q store.Querier, e Event) error {
	_, err := q.Exec(ctx, `INSERT INTO custom_events (id, workspace_id, name, schema, created_at, updated_at) VALUES (?, ?, ?, ?, ?, NULL)`,
		e.ID, e.WorkspaceID, e.Name, schemaText(e.Schema), store.Millis(e.CreatedAt))
	return err
}

// eventByRef reads a custom event of the workspace by id or name.
func eventByRef(ctx context.Context, q store.Querier, workspaceID, ref string) (Event, error) {
	return scanEvent(q.QueryRow(ctx, `SELECT `+eventColumns+` FROM custom_events
		WHERE workspace_id = ? AND (id = ? OR name = ?)`, workspaceID, ref, ref))
}

// listEvents reads the workspace's custom events newest first, after a
// position when paging.
func listEvents(ctx context.Context, q store.Querier, workspaceID string, before *time.Time, beforeID string, limit int) ([]Event, error) {
	if before == nil {
		return store.QueryAll(ctx, q, scanEvent, `SELECT `+eventColumns+` FROM custom_events
			WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, workspaceID, limit)
	}
	at := store.Millis(*before)
	return store.QueryAll(ctx, q, scanEvent, `SELECT `+eventColumns+` FROM custom_events
		WHERE workspace_id = ? AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?`,
		workspaceID, at, at, beforeID, limit)
}

func setEventSchema(ctx context.Context, q store.Querier, workspaceID, id string, schema map[string]string, now time.Time) error {
	return affected(q.Exec(ctx, `UPDATE custom_events SET schema = ?, updated_at = ? WHERE workspace_id = ? AND id = ?`,
		schemaText(schema), store.Millis(now), workspaceID, id))
}

func deleteEvent(ctx context.Context, q store.Querier, workspaceID, id string) error {
	return affected(q.Exec(ctx, `DELETE FROM custom_events WHERE workspace_id = ? AND id = ?`, workspaceID, id))
}

// automationsOnEvent reads the live, enabled automations of the workspace
// whose trigger is the custom event name.
func automationsOnEvent(ctx context.Context, q store.Querier, workspaceID, name string) ([]Automation, error) {
	return store.QueryAll(ctx, q, scanAutomation, `SELECT `+autoColumns+` FROM automations
		WHERE workspace_id = ? AND deleted_at IS NULL AND enabled = 1 AND trigger_event = ? ORDER BY created_at, id`, workspaceID, name)
}
