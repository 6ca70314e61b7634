package topics

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"mailroom/internal/store"
)

// This file holds every statement on the topics and topic_preferences
// tables; the package is their only reader and writer.

const topicColumns = `id, workspace_id, topic_key, name, description, default_opt_in, required, created_at, updated_at, archived_at`

func scanTopic(sc store.Scanner) (Topic, error) {
	var t Topic
	var optIn, required int
	var created, updated int64
	var archived sql.NullInt64
	err := sc.Scan(&t.ID, &t.WorkspaceID, &t.Key, &t.Name, &t.Description, &optIn, &required, &created, &updated, &archived)
	t.DefaultOptIn, t.Required = optIn != 0, required != 0
	t.CreatedAt, t.UpdatedAt, t.ArchivedAt = store.FromMillis(created), store.FromMillis(updated), store.NullMillis(archived)
	return t, err
}

// topicByRef reads a topic of the workspace (archived or not) by id or
// key; store.ErrNotFound when there is none.
func topicByRef(ctx context.Context, q store.Querier, workspaceID, ref string) (Topic, error) {
	return scanTopic(q.QueryRow(ctx, `SELECT `+topicColumns+` FROM topics
		WHERE workspace_id = ? AND (id = ? OR topic_key = ?) LIMIT 1`, workspaceID, ref, ref))
}

// listTopics reads the workspace's topics, oldest first (the order a
// preference page shows them in), live ones only unless archived is true.
func listTopics(ctx context.Context, q store.Querier, workspaceID string, archived bool) ([]Topic, error) {
	live := ` AND archived_at IS NULL`
	if archived {
		live = ``
	}
	return store.QueryAll(ctx, q, scanTopic, `SELECT `+topicColumns+` FROM topics WHERE workspace_id = ?`+live+
		` ORDER BY created_at, id`, workspaceID)
}

func keyTaken(ctx context.Context, q store.Querier, workspaceID, key string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM topics WHERE workspace_id = ? AND topic_key = ?`, workspaceID, key).Scan(&n)
	return n > 0, err
}

func insertTopic(ctx context.Context, q store.Querier, t Topic) error {
	_, err := q.Exec(ctx, `INSERT INTO topics (`+topicColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
		t.ID, t.WorkspaceID, t.Key, t.Name, t.Description, store.BoolInt(t.DefaultOptIn), store.BoolInt(t.Required),
		store.Millis(t.CreatedAt), store.Millis(t.UpdatedAt))
	return err
}

func updateTopic(ctx context.Context, q store.Querier, t Topic) error {
	_, err := q.Exec(ctx, `UPDATE topics SET name = ?, description = ?, default_opt_in = ?, required = ?, updated_at = ?, archived_at = ?
		WHERE id = ? AND workspace_id = ?`,
		t.Name, t.Description, store.BoolInt(t.DefaultOptIn), store.BoolInt(t.Required), store.Millis(t.UpdatedAt), store.MillisOrNull(t.ArchivedAt), t.ID, t.WorkspaceID)
	if err != nil {
		return fmt.Errorf("updating topic: %w", err)
	}
	return nil
}

// stored is one preference row.
type stored struct {
	subscribed bool
	source     string
	updatedAt  time.Time
}

// preferencesOf reads the rows of one address, by topic id.
func preferencesOf(ctx context.Context, q store.Querier, workspaceID, email string) (map[string]stored, error) {
	type row struct {
		topic string
		stored
	}
	rows, err := store.QueryAll(ctx, q, func(sc store.Scanner) (row, error) {
		var r row
		var sub int
		var at int64
		err := sc.Scan(&r.topic, &sub, &r.source, &at)
		r.subscribed, r.updatedAt = sub != 0, store.FromMillis(at)
		return r, err
	}, `SELECT topic_id, subscribed, source, updated_at FROM topic_preferences WHERE workspace_id = ? AND email = ?`, workspaceID, email)
	if err != nil {
		return nil, fmt.Errorf("reading topic preferences: %w", err)
	}
	out := make(map[string]stored, len(rows))
	for _, r := range rows {
		out[r.topic] = r.stored
	}
	return out, nil
}

// subscribedIn reads, for the addresses that have a row for the topic,
// whether they are subscribed (the send path's one read).
func subscribedIn(ctx context.Context, q store.Querier, workspaceID, topicID string, emails []string) (map[string]bool, error) {
	if len(emails) == 0 {
		return map[string]bool{}, nil
	}
	args := []any{workspaceID, topicID}
	for _, e := range emails {
		args = append(args, e)
	}
	type row struct {
		email string
		sub   bool
	}
	rows, err := store.QueryAll(ctx, q, func(sc store.Scanner) (row, error) {
		var r row
		var sub int
		err := sc.Scan(&r.email, &sub)
		r.sub = sub != 0
		return r, err
	}, `SELECT email, subscribed FROM topic_preferences WHERE workspace_id = ? AND topic_id = ? AND email IN (?`+
		strings.Repeat(", ?", len(emails)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading topic preferences: %w", err)
	}
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.email] = r.sub
	}
	return out, nil
}

// setPreference writes one address's choice for one topic.
func setPreference(ctx context.Context, q store.Querier, workspaceID, topicID, email string, subscribed bool, source string, now time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO topic_preferences (workspace_id, topic_id, email, subscribed, source, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (topic_id, email) DO UPDATE SET subscribed = excluded.subscribed, source = excluded.source, updated_at = excluded.updated_at`,
		workspaceID, topicID, email, store.BoolInt(subscribed), source, store.Millis(now))
	if err != nil {
		return fmt.Errorf("writing topic preference: %w", err)
	}
	return nil
}
