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

// queueBatch commits one batch job naming the emails, in order.
func (b *bundle) queueBatch(t *testing.T, ids ...string) {
	t.Helper()
	args := jobs.DeliverBatchArgs{}
	for _, id := range ids {
		args.Emails = append(args.Emails, jobs.EmailRef{EmailID: id, WorkspaceID: b.a.WorkspaceID})
	}
	err := b.a.DB.InTx(context.Background(), func(tx *store.Tx) error {
		tx.AddJob(args)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBatchJobDeliversAndHandsDeferralsOn: one batch job carries three
// emails; the accepted one is delivered, the refused one bounces, and the
// deferred one gets its own deliver job at its retry time.
func TestBatchJobDeliversAndHandsDeferralsOn(t *testing.T) {
	b := setup(t)
	mk := func(to string) string {
		return b.insert(t, send{From: "News <news@example.com>", To: []string{to}, Subject: "batch", Text: "hi", SkipDelivery: true})
	}
	ok, rejected, deferred := mk("ann@example.net"), mk("reject-bob@example.net"), mk("defer-cy@example.org")
	b.queueBatch(t, ok, rejected, deferred)
	b.waitStatus(t, ok, "delivered")
	b.waitStatus(t, rejected, "bounced")
	// the deferral's own job, due at its retry time
	var due []time.Time
	wait.Until(15*time.Second, func() bool {
		var err error
		due, err = store.QueryAll(context.Background(), b.a.DB, func(sc store.Scanner) (time.Time, error) {
			var at any // time.Time on PostgreSQL, text on SQLite
			err := sc.Scan(&at)
			return riverTime(at), err
		}, `SELECT scheduled_at FROM river_job WHERE kind = 'deliver' AND CAST(args AS TEXT) LIKE ?`, "%"+deferred+"%")
		if err != nil {
			t.Fatal(err)
		}
		return len(due) > 0
	})
	if len(due) != 1 {
		t.Fatalf("deferred email has %d deliver jobs, want 1", len(due))
	}
	if r := b.row(t, deferred); r.Status != "sending" || r.Recipients[0].Status != "deferred" {
		t.Fatalf("deferred email: %+v", r)
	}
	if time.Until(due[0]) < 30*time.Second {
		t.Fatalf("retry scheduled at %v, want about a minute ahead", due[0])
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
	b.queueBatch(t, light, heavy, light)
	b.waitStatus(t, light, "delivered")
	b.waitStatus(t, heavy, "delivered")
	for _, id := range []string{light, heavy} {
		if r := b.row(t, id); r.Recipients[0].Attempts != 1 {
			t.Fatalf("email %s: %+v, want one attempt", id, r)
		}
	}
}

// riverTime reads a river_job timestamp as either database's driver gives it.
func riverTime(v any) time.Time {
	switch x := v.(type) {
	case time.Time:
		return x
	case string:
		for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano} {
			if at, err := time.Parse(layout, x); err == nil {
				return at
			}
		}
	}
	return time.Time{}
}
