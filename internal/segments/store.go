package segments

import (
	"context"
	"time"

	"mailroom/internal/store"
)

// This file holds every statement on the segments table.

const columns = `id, workspace_id, audience_id, name, description, match_mode, rules, member_count, counted_at, created_at, updated_at`

func scanSegment(sc store.Scanner) (Segment, error) {
	var s Segment
	var rules string
	var counted, created, updated int64
	if err := sc.Scan(&s.ID, &s.WorkspaceID, &s.AudienceID, &s.Name, &s.Description, &s.Match, &rules, &s.MemberCount, &counted, &created, &updated); err != nil {
		return s, err
	}
	s.rawRules = rules
	s.CountedAt, s.CreatedAt, s.UpdatedAt = store.FromMillis(counted), store.FromMillis(created), store.FromMillis(updated)
	return s, nil
}

func insertSegment(ctx context.Context, q store.Querier, s Segment) error {
	_, err := q.Exec(ctx, `INSERT INTO segments (`+columns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.WorkspaceID, s.AudienceID, s.Name, s.Description, s.Match, s.rawRules, s.MemberCount,
		store.Millis(s.CountedAt), store.Millis(s.CreatedAt), store.Millis(s.UpdatedAt))
	return err
}

func updateSegment(ctx context.Context, q store.Querier, s Segment) error {
	_, err := q.Exec(ctx, `UPDATE segments SET name = ?, description = ?, match_mode = ?, rules = ?, member_count = ?, counted_at = ?, updated_at = ?
		WHERE id = ? AND workspace_id = ?`,
		s.Name, s.Description, s.Match, s.rawRules, s.MemberCount, store.Millis(s.CountedAt), store.Millis(s.UpdatedAt), s.ID, s.WorkspaceID)
	return err
}

func setCount(ctx context.Context, q store.Querier, workspaceID, id string, n int, at time.Time) error {
	_, err := q.Exec(ctx, `UPDATE segments SET member_count = ?, counted_at = ? WHERE id = ? AND workspace_id = ?`, n, store.Millis(at), id, workspaceID)
	return err
}

func segmentByID(ctx context.Context, q store.Querier, workspaceID, id string) (Segment, error) {
	return scanSegment(q.QueryRow(ctx, `SELECT `+columns+` FROM segments WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}

func listSegments(ctx context.Context, q store.Querier, workspaceID, audienceID string) ([]Segment, error) {
	if audienceID != "" {
		return store.QueryAll(ctx, q, scanSegment, `SELECT `+columns+` FROM segments WHERE workspace_id = ? AND audience_id = ? ORDER BY created_at DESC, id DESC`, workspaceID, audienceID)
	}
	return store.QueryAll(ctx, q, scanSegment, `SELECT `+columns+` FROM segments WHERE workspace_id = ? ORDER BY created_at DESC, id DESC`, workspaceID)
}

func deleteSegment(ctx context.Context, q store.Querier, workspaceID, id string) (bool, error) {
	return store.Changed(q.Exec(ctx, `DELETE FROM segments WHERE id = ? AND workspace_id = ?`, id, workspaceID))
}
