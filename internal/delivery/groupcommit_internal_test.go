package delivery

import (
	"context"
	"slices"
	"testing"

	"mailroom/internal/outbound"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// padded fills a chunk of the batch's addresses up to a power of two
// without writing over the chunk that follows it in the same array.
func TestPaddedLeavesTheNextChunkAlone(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	got := padded(all[:3])
	if want := []string{"a", "b", "c", "c"}; !slices.Equal(got, want) {
		t.Errorf("padded %v, want %v", got, want)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(all, want) {
		t.Errorf("the addresses became %v, want %v", all, want)
	}
	if got := padded(all[:4]); len(got) != 4 {
		t.Errorf("padded a power of two to %d", len(got))
	}
}

// The attempts an outcome writes are inserted just before its commit; a
// read of them inside the same transaction (a report on the email sharing
// the commit) still finds them, and a write rolled back to its savepoint
// leaves none of its rows.
func TestPendingAttemptsAreReadInTheirTransaction(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ok := outbound.RcptResult{OK: true, Code: 250, Enhanced: "2.0.0", Message: "queued as 1", Stage: outbound.StageData}
	one := &email{ID: "em_one", To: []string{"a@example.net"}}
	two := &email{ID: "em_two", To: []string{"b@example.net", "c@example.net"}}
	err = db.InTx(ctx, func(tx *store.Tx) error {
		if err := writeAttempts(ctx, tx, one, []attemptRow{{Recipient: "a@example.net", Attempt: 2, Outcome: RcptDelivered, Result: ok}}); err != nil {
			return err
		}
		got, err := outcomesOf(ctx, tx, one.ID, one.To)
		if err != nil {
			return err
		}
		if want := []Recipient{{Email: "a@example.net", Status: RcptDelivered, Code: 250, Enhanced: "2.0.0", Message: "queued as 1", Attempts: 2, Stage: outbound.StageData}}; !slices.Equal(got, want) {
			t.Errorf("read in the transaction: %+v, want %+v", got, want)
		}
		mark := tx.Mark()
		if err := writeAttempts(ctx, tx, two, []attemptRow{{Recipient: "b@example.net", Attempt: 1, Outcome: RcptDelivered, Result: ok}}); err != nil {
			return err
		}
		tx.Rewind(mark)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM email_attempts WHERE email_id = ?`, one.ID).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d attempt rows of the committed write (%v), want 1", n, err)
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM email_attempts WHERE email_id = ?`, two.ID).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d attempt rows of the rewound write (%v), want 0", n, err)
	}
}
