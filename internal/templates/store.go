package templates

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/store"
)

// This file holds every statement on the templates and template_versions
// tables; the package is their only reader and writer.

const tplColumns = `id, workspace_id, name, slug, description, published_version_id, latest_version, created_at, updated_at`

func scanTemplate(sc interface{ Scan(...any) error }) (Template, error) {
	var t Template
	var pub sql.NullString
	var created, updated int64
	err := sc.Scan(&t.ID, &t.WorkspaceID, &t.Name, &t.Slug, &t.Description, &pub, &t.LatestVersion, &created, &updated)
	t.PublishedVersionID = pub.String
	t.CreatedAt, t.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return t, err
}

// templateByRef reads a live template of the workspace by id or slug;
// store.ErrNotFound when there is none.
func templateByRef(ctx context.Context, q store.Querier, workspaceID, ref string) (Template, error) {
	return scanTemplate(q.QueryRow(ctx, `SELECT `+tplColumns+` FROM templates
		WHERE workspace_id = ? AND (id = ? OR slug = ?) AND deleted_at IS NULL
		ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1`, workspaceID, ref, ref, ref))
}

// listTemplates reads the workspace's live templates, newest first.
func listTemplates(ctx context.Context, q store.Querier, workspaceID string, limit int) ([]Template, error) {
	rows, err := q.Query(ctx, `SELECT `+tplColumns+` FROM templates WHERE workspace_id = ? AND deleted_at IS NULL
		ORDER BY created_at DESC, id DESC LIMIT ?`, workspaceID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing templates: %w", err)
	}
	defer rows.Close()
	out := []Template{}
	for rows.Next() {
		t, err := scanTemplate(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// slugTaken says whether a live template of the workspace other than
// exceptID has the slug.
func slugTaken(ctx context.Context, q store.Querier, workspaceID, slug, exceptID string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM templates WHERE workspace_id = ? AND slug = ? AND id <> ? AND deleted_at IS NULL`,
		workspaceID, slug, exceptID).Scan(&n)
	return n > 0, err
}

func insertTemplate(ctx context.Context, tx *store.Tx, t Template) error {
	_, err := tx.Exec(ctx, `INSERT INTO templates (id, workspace_id, name, slug, description, published_version_id, latest_version, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, NULL, 0, ?, ?)`,
		t.ID, t.WorkspaceID, t.Name, t.Slug, t.Description, store.Millis(t.CreatedAt), store.Millis(t.UpdatedAt))
	return err
}

// insertVersion writes the next version of the template: bumping
// latest_version first takes the template row's lock, so concurrent
// writers get distinct numbers in turn.
func insertVersion(ctx context.Context, tx *store.Tx, workspaceID, templateID string, v Version, now time.Time) (Version, error) {
	var n int
	if err := tx.QueryRow(ctx, `UPDATE templates SET latest_version = latest_version + 1, updated_at = ?
		WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL RETURNING latest_version`,
		store.Millis(now), templateID, workspaceID).Scan(&n); err != nil {
		return Version{}, err
	}
	v.ID, v.TemplateID, v.Version, v.CreatedAt = ids.New("tplv"), templateID, n, now
	vars, err := json.Marshal(variablesJSON(v.Variables))
	if err != nil {
		return Version{}, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO template_versions (id, template_id, workspace_id, version, subject, html, text_body, variables, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ID, templateID, workspaceID, v.Version, v.Subject, v.HTML, v.Text, string(vars), store.Millis(now)); err != nil {
		return Version{}, fmt.Errorf("adding template version: %w", err)
	}
	return v, nil
}

// storedVariable is a declared variable as stored (and as the API shows it).
type storedVariable struct {
	Name     string  `json:"name"`
	Default  *string `json:"default,omitempty"`
	Required bool    `json:"required"`
}

func variablesJSON(vs []Variable) []storedVariable {
	out := make([]storedVariable, len(vs))
	for i, v := range vs {
		out[i] = storedVariable(v)
	}
	return out
}

const versionColumns = `id, template_id, version, subject, html, text_body, variables, created_at`

func scanVersion(sc interface{ Scan(...any) error }) (Version, error) {
	var v Version
	var vars string
	var created int64
	if err := sc.Scan(&v.ID, &v.TemplateID, &v.Version, &v.Subject, &v.HTML, &v.Text, &vars, &created); err != nil {
		return v, err
	}
	var sv []storedVariable
	if err := json.Unmarshal([]byte(vars), &sv); err != nil {
		return v, fmt.Errorf("template version %s: stored variables: %w", v.ID, err)
	}
	for _, s := range sv {
		v.Variables = append(v.Variables, Variable(s))
	}
	v.CreatedAt = store.FromMillis(created)
	return v, nil
}

// versions reads every version of a template, newest first.
func versions(ctx context.Context, q store.Querier, templateID string) ([]Version, error) {
	rows, err := q.Query(ctx, `SELECT `+versionColumns+` FROM template_versions WHERE template_id = ? ORDER BY version DESC`, templateID)
	if err != nil {
		return nil, fmt.Errorf("reading template versions: %w", err)
	}
	defer rows.Close()
	out := []Version{}
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// versionBy reads one version of a template by id, or by number when id is
// ""; store.ErrNotFound when there is none.
func versionBy(ctx context.Context, q store.Querier, templateID, id string, number int) (Version, error) {
	if id != "" {
		return scanVersion(q.QueryRow(ctx, `SELECT `+versionColumns+` FROM template_versions WHERE template_id = ? AND id = ?`, templateID, id))
	}
	return scanVersion(q.QueryRow(ctx, `SELECT `+versionColumns+` FROM template_versions WHERE template_id = ? AND version = ?`, templateID, number))
}

// publishedByRef is the send path's one read: the live template named by
// id or slug and its published version's id ("" when none is). The
// version's content comes from the cache (versions never change).
func publishedByRef(ctx context.Context, q store.Querier, workspaceID, ref string) (templateID, versionID string, err error) {
	var pub sql.NullString
	err = q.QueryRow(ctx, `SELECT id, published_version_id FROM templates
		WHERE workspace_id = ? AND (id = ? OR slug = ?) AND deleted_at IS NULL
		ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1`, workspaceID, ref, ref, ref).Scan(&templateID, &pub)
	return templateID, pub.String, err
}

func setPublished(ctx context.Context, q store.Querier, templateID, versionID string, now time.Time) error {
	_, err := q.Exec(ctx, `UPDATE templates SET published_version_id = ?, updated_at = ? WHERE id = ?`, versionID, store.Millis(now), templateID)
	return err
}

func updateTemplate(ctx context.Context, q store.Querier, t Template) error {
	_, err := q.Exec(ctx, `UPDATE templates SET name = ?, slug = ?, description = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL`,
		t.Name, t.Slug, t.Description, store.Millis(t.UpdatedAt), t.ID)
	if store.IsUniqueViolation(err) {
		return errSlugTaken
	}
	return err
}

func softDelete(ctx context.Context, q store.Querier, workspaceID, id string, now time.Time) (bool, error) {
	ok, err := store.Changed(q.Exec(ctx, `UPDATE templates SET deleted_at = ?, updated_at = ? WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL`,
		store.Millis(now), store.Millis(now), id, workspaceID))
	if err != nil {
		return false, fmt.Errorf("deleting template: %w", err)
	}
	return ok, nil
}

var errSlugTaken = errors.New("templates: slug taken")
