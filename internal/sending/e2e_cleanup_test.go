package sending_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/sending"
	"mailroom/internal/testkit/testapp"
)

// TestCleanupForgetsExpiredKeys: the hourly pass deletes the idempotency
// keys older than the window and keeps the younger ones.
func TestCleanupForgetsExpiredKeys(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(time.Now())
	a := testapp.Start(t, testapp.WithClock(c))
	send(t, a, msg("idempotency_key", "old"))
	c.Advance(sending.IdempotencyWindow - time.Hour)
	send(t, a, msg("idempotency_key", "young"))
	c.Advance(2 * time.Hour)
	ctx := context.Background()
	if err := (&sending.CleanupWorker{S: a.Sending()}).Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := a.DB.Query(ctx, `SELECT key FROM idempotency_keys WHERE workspace_id = ?`, a.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if !slices.Equal(keys, []string{"young"}) {
		t.Fatalf("keys left: %v, want [young]", keys)
	}
}
