package suppressions_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/clock"
	"mailroom/internal/store"
	"mailroom/internal/suppressions"
	"mailroom/internal/testkit/testdb"
)

func openDB(t *testing.T) *store.DB { return testdb.Open(t) }

// Suppressed is what the send path consults: it must see the workspace's
// rows and the global ones, and never another workspace's.
func TestSuppressedSeesWorkspaceAndGlobalRowsOnly(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	svc := suppressions.New(db, clock.NewFake(now))
	if _, _, err := svc.Add(ctx, "ws_a", "Mine@Example.com", suppressions.ReasonUnsub); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Add(ctx, "ws_b", "theirs@example.com", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := suppressions.AddGlobal(ctx, db, "everyone@example.com", suppressions.ReasonComplaint, now); err != nil {
		t.Fatal(err)
	}
	err := db.InTx(ctx, func(tx *store.Tx) error {
		_, err := suppressions.AddTx(ctx, tx, "ws_a", "bounced@example.com", suppressions.ReasonBounce, "em_1", now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := suppressions.Suppressed(ctx, db, "ws_a", []string{"MINE@example.com", "theirs@example.com", "Everyone@Example.com", "bounced@example.com", "free@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"mine@example.com": "unsub", "everyone@example.com": "complaint", "bounced@example.com": "bounce"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	got, err = suppressions.Suppressed(ctx, db, "ws_b", []string{"mine@example.com", "theirs@example.com", "everyone@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["theirs@example.com"] != "manual" || got["everyone@example.com"] != "complaint" {
		t.Fatalf("ws_b sees %v", got)
	}
}

func TestAddIsIdempotentAndFirstReasonWins(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	svc := suppressions.New(db, clock.NewFake(time.Unix(1700000000, 0)))
	first, created, err := svc.Add(ctx, "ws_a", "a@example.com", suppressions.ReasonBounce)
	if err != nil || !created {
		t.Fatalf("first add: %v %v", created, err)
	}
	again, created, err := svc.Add(ctx, "ws_a", "A@EXAMPLE.COM", suppressions.ReasonManual)
	if err != nil || created || again.ID != first.ID || again.Reason != suppressions.ReasonBounce {
		t.Fatalf("second add: %+v %v %v", again, created, err)
	}
	if _, _, err := svc.Add(ctx, "ws_a", "b@example.com", "spam"); !apierr.Is(err, "invalid_request") {
		t.Fatalf("bad reason: %v", err)
	}
	// Concurrent adds of one address end with one row, and every caller gets
	// its id.
	var wg sync.WaitGroup
	idsSeen := make([]string, 8)
	for i := range idsSeen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _, err := svc.Add(ctx, "ws_a", "race@example.com", "")
			if err != nil {
				t.Error(err)
				return
			}
			idsSeen[i] = s.ID
		}()
	}
	wg.Wait()
	for _, id := range idsSeen {
		if id != idsSeen[0] {
			t.Fatalf("concurrent adds returned different ids: %v", idsSeen)
		}
	}
	rows, total, err := svc.List(ctx, "ws_a", suppressions.Filter{Email: "race@example.com"}, 10, nil)
	if err != nil || total != 1 || len(rows) != 1 {
		t.Fatalf("race rows: %d %d %v", total, len(rows), err)
	}
}
