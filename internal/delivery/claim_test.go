package delivery

import (
	"context"
	"errors"
	"testing"
	"time"

	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/sending"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// TestStaleAttemptCommitsNothing (#39 item 2): once another attempt has
// claimed an email (the node that took a given-up node's work over), the
// first attempt's outcome is not written; the holder's is.
func TestStaleAttemptCommitsNothing(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t)
	if _, err := jobs.New(db, jobs.Options{}); err != nil {
		t.Fatal(err)
	}
	id, now := ids.New("em"), time.Now()
	if _, err := db.Exec(ctx, `INSERT INTO emails (id, workspace_id, status, from_addr, to_addrs, subject, text_body, created_at, updated_at)
		VALUES (?, 'ws_claim', 'queued', 'onboarding@mailroom.test', '["ann@example.net"]', 'claim', 'hello', ?, ?)`, id, store.Millis(now), store.Millis(now)); err != nil {
		t.Fatal(err)
	}
	s := New(Config{DB: db})
	claim := func(token string) {
		t.Helper()
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			_, err := sending.MarkSending(ctx, tx, id, token, now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := loadEmail(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	stale.claim = "first"
	claim("first")
	claim("second") // the node that took the work over
	delivered := []Recipient{{Email: "ann@example.net", Status: RcptDelivered, Code: 250, Attempts: 1}}
	if err := s.recordOnce(stale, delivered, nil, nil, now); !errors.Is(err, errGone) {
		t.Fatalf("the stale attempt's outcome: %v, want errGone", err)
	}
	var status, holder string
	if err := db.QueryRow(ctx, `SELECT status, claim FROM emails WHERE id = ?`, id).Scan(&status, &holder); err != nil || status != "sending" || holder != "second" {
		t.Fatalf("after the stale write: %s held by %q (%v)", status, holder, err)
	}
	holderEmail, _ := loadEmail(ctx, db, id)
	holderEmail.claim = "second"
	if err := s.recordOnce(holderEmail, delivered, nil, nil, now); err != nil {
		t.Fatalf("the holder's outcome: %v", err)
	}
	if err := db.QueryRow(ctx, `SELECT status, claim FROM emails WHERE id = ?`, id).Scan(&status, &holder); err != nil || status != "delivered" || holder != "" {
		t.Fatalf("after the holder's write: %s held by %q (%v)", status, holder, err)
	}
	// The final email keeps no claim; a stale attempt still finds it gone.
	if err := s.recordOnce(stale, delivered, nil, nil, now); !errors.Is(err, errGone) {
		t.Fatalf("a stale write after the outcome: %v, want errGone", err)
	}
}

// TestOutcomeMergesAChangeMadeMeanwhile: an outcome is written in one
// statement only while the row still holds the recipients its attempt
// read; one written meanwhile (here another recipient's) is read again
// and merged, not overwritten.
func TestOutcomeMergesAChangeMadeMeanwhile(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t)
	if _, err := jobs.New(db, jobs.Options{}); err != nil {
		t.Fatal(err)
	}
	id, now := ids.New("em"), time.Now()
	if _, err := db.Exec(ctx, `INSERT INTO emails (id, workspace_id, status, from_addr, to_addrs, subject, text_body, created_at, updated_at)
		VALUES (?, 'ws_merge', 'queued', 'onboarding@mailroom.test', '["ann@example.net", "bob@example.net"]', 'merge', 'hello', ?, ?)`,
		id, store.Millis(now), store.Millis(now)); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		_, err := sending.MarkSending(ctx, tx, id, "c1", now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s := New(Config{DB: db})
	load := func() *email {
		t.Helper()
		e, err := loadEmail(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		e.claim = "c1"
		return e
	}
	first, second := load(), load() // both read the recipients untouched
	if err := s.recordOnce(first, []Recipient{{Email: "ann@example.net", Status: RcptDelivered, Code: 250, Attempts: 1}}, nil, nil, now); err != nil {
		t.Fatal(err)
	}
	var status string
	if err := db.QueryRow(ctx, `SELECT status FROM emails WHERE id = ?`, id).Scan(&status); err != nil || status != "sending" {
		t.Fatalf("with bob still owed: %s (%v)", status, err)
	}
	if err := s.recordOnce(second, []Recipient{{Email: "bob@example.net", Status: RcptBounced, Code: 550, Attempts: 1}}, nil, nil, now); err != nil {
		t.Fatal(err)
	}
	var raw string
	if err := db.QueryRow(ctx, `SELECT status, recipients FROM emails WHERE id = ?`, id).Scan(&status, &raw); err != nil {
		t.Fatal(err)
	}
	rcpts, err := decodeRecipients(ctx, db, id, raw)
	if err != nil || status != "delivered" || len(rcpts) != 2 || rcpts[0].Status != RcptDelivered || rcpts[1].Status != RcptBounced {
		t.Fatalf("after both outcomes: %s %+v (%v)", status, rcpts, err)
	}
}
