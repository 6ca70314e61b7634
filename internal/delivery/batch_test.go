package delivery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"mailroom/internal/jobs"
	"mailroom/internal/store"
	"mailroom/internal/testkit/wait"
)

// TestBatchJobDeliversAndHandsDeferralsOn: one batch job carries three
// emails; the accepted one is delivered, the refused one bounces, and the
// deferred one gets its own deliver job at its retry time.
func TestBatchJobDeliversAndHandsDeferralsOn(t *testing.T) {
	b := setup(t)
	mk := func(to string) string {
		return b.insert(t, send{From: "News <news@example.com>", To: []string{to}, Subject: "batch", Text: "hi", SkipDelivery: true})
	}
	ok, rejected, deferred := mk("ann@example.net"), mk("reject-bob@example.net"), mk("defer-cy@example.org")
	err := b.a.DB.InTx(context.Background(), func(tx *store.Tx) error {
		tx.AddJob(jobs.DeliverBatchArgs{Emails: []jobs.EmailRef{
			{EmailID: ok, WorkspaceID: b.a.WorkspaceID},
			{EmailID: rejected, WorkspaceID: b.a.WorkspaceID},
			{EmailID: deferred, WorkspaceID: b.a.WorkspaceID},
		}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, ok, "delivered")
	b.waitStatus(t, rejected, "bounced")
	var scheduledAt time.Time
	var n int
	wait.Until(15*time.Second, func() bool {
		rows, err := b.a.DB.Query(context.Background(), `SELECT scheduled_at FROM river_job WHERE kind = 'deliver' AND CAST(args AS TEXT) LIKE ?`, "%"+deferred+"%")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v any
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			n++
			switch x := v.(type) {
			case time.Time:
				scheduledAt = x
			case string:
				scheduledAt, _ = time.Parse("2006-01-02 15:04:05.999999999-07:00", x)
				if scheduledAt.IsZero() {
					scheduledAt, _ = time.Parse(time.RFC3339Nano, x)
				}
			}
		}
		rows.Close()
		return n > 0
	})
	if n != 1 {
		rows, _ := b.a.DB.Query(context.Background(), `SELECT kind, state, CAST(args AS TEXT) FROM river_job`)
		for rows.Next() {
			var k, st, a string
			rows.Scan(&k, &st, &a)
			t.Logf("job %s %s %s", k, st, a)
		}
		rows.Close()
		t.Logf("row %+v", b.row(t, deferred))
		t.Fatalf("deferred email has %d deliver jobs, want 1", n)
	}
	if r := b.row(t, deferred); r.Status != "sending" || r.Recipients[0].Status != "deferred" {
		t.Fatalf("deferred email: %+v", r)
	}
	if !scheduledAt.IsZero() && time.Until(scheduledAt) < 30*time.Second {
		t.Fatalf("retry scheduled at %v, want about a minute ahead", scheduledAt)
	}
}

// TestBatchReadsHeavyEmailsAlone: a batch job reads its light emails in one
// query and an email whose body is over the batch's bound at its turn;
// both, and an email named twice, are delivered once.
func TestBatchReadsHeavyEmailsAlone(t *testing.T) {
	b := setup(t)
	light := b.insert(t, send{From: "News <news@example.com>", To: []string{"ann@example.net"}, Subject: "light", Text: "hi", SkipDelivery: true})
	heavy := b.insert(t, send{From: "News <news@example.com>", To: []string{"bob@example.net"}, Subject: "heavy",
		Text: strings.Repeat("a line of the heavy body\n", 400<<10/25), SkipDelivery: true})
	err := b.a.DB.InTx(context.Background(), func(tx *store.Tx) error {
		tx.AddJob(jobs.DeliverBatchArgs{Emails: []jobs.EmailRef{
			{EmailID: light, WorkspaceID: b.a.WorkspaceID},
			{EmailID: heavy, WorkspaceID: b.a.WorkspaceID},
			{EmailID: light, WorkspaceID: b.a.WorkspaceID},
		}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, light, "delivered")
	b.waitStatus(t, heavy, "delivered")
	for _, id := range []string{light, heavy} {
		if r := b.row(t, id); r.Recipients[0].Attempts != 1 {
			t.Fatalf("email %s: %+v, want one attempt", id, r)
		}
	}
}
