package inbound_test

import (
	"fmt"
	"net"
	"sync"
	"testing"

	"mailroom/internal/inbound"
	"mailroom/internal/smtpin"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testapp"
)

// TestReceiveBatchOneFailsAlone: messages received at once share commits
// (groupcommit.Optimistic: a failed write rolls its batch back and the batch
// runs again without it). A message the database refuses is refused alone;
// each of the others is stored once, with its one email.received event, and
// nothing of the refused one is left.
func TestReceiveBatchOneFailsAlone(t *testing.T) {
	a := testapp.Start(t)
	ctx := t.Context()
	// A real refusal from the database: a trigger on one subject.
	refuse := []string{`CREATE TRIGGER refuse_poison BEFORE INSERT ON messages FOR EACH ROW WHEN (NEW.subject = 'poison')
		BEGIN SELECT RAISE(ABORT, 'poison refused'); END`}
	if a.DB.Dialect == store.Postgres {
		refuse = []string{`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'poison refused'; END $$`,
			`CREATE TRIGGER refuse_poison BEFORE INSERT ON messages FOR EACH ROW WHEN (NEW.subject = 'poison') EXECUTE FUNCTION refuse_poison()`}
	}
	for _, q := range refuse {
		if _, err := a.DB.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	mbs, err := a.Inbound().Mailboxes(ctx, a.WorkspaceID, "")
	if err != nil {
		t.Fatal(err)
	}
	m := &mbs[0]
	env := smtpin.Envelope{RemoteIP: net.ParseIP("127.0.0.1"), MailFrom: "a@x.example", Rcpt: m.Address}
	const n, poison = 24, 11
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		subject := fmt.Sprintf("message %d", i)
		if i == poison {
			subject = "poison"
		}
		raw := fmt.Sprintf("From: a@x.example\r\nSubject: %s\r\nMessage-ID: <b%d@x.example>\r\n\r\nbody %d\r\n", subject, i, i)
		wg.Go(func() {
			_, errs[i] = a.Inbound().Receive(ctx, m, env, []byte(raw))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == poison) {
			t.Errorf("message %d: Receive answered %v", i, err)
		}
	}
	got, err := a.Inbound().Messages(ctx, inbound.Reader{WorkspaceID: a.WorkspaceID}, inbound.MessageFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, msg := range got {
		seen[msg.Subject]++
	}
	for i := range n {
		want, subject := 1, fmt.Sprintf("message %d", i)
		if i == poison {
			want, subject = 0, "poison"
		}
		if seen[subject] != want {
			t.Errorf("%q stored %d times, want %d", subject, seen[subject], want)
		}
	}
	var events, threads int
	if err := a.DB.QueryRow(ctx, `SELECT count(*) FROM events WHERE mailbox_id = ?`, m.ID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if err := a.DB.QueryRow(ctx, `SELECT count(*) FROM threads WHERE mailbox_id = ?`, m.ID).Scan(&threads); err != nil {
		t.Fatal(err)
	}
	if events != n-1 || threads != n-1 {
		t.Errorf("%d events and %d threads for the mailbox, want %d of each", events, threads, n-1)
	}
}

// TestIndexWrittenOncePerCommit: on SQLite a commit's new messages enter the
// full-text index by one statement (indexLater), so FTS5 writes one segment
// for them; a trigger per message wrote one per message (64 here, merged
// down only later). Each message is found by its own word.
func TestIndexWrittenOncePerCommit(t *testing.T) {
	a := testapp.Start(t)
	if a.DB.Dialect != store.SQLite {
		t.Skip("PostgreSQL indexes a generated column")
	}
	ctx := t.Context()
	mbs, err := a.Inbound().Mailboxes(ctx, a.WorkspaceID, "")
	if err != nil {
		t.Fatal(err)
	}
	segments := func() (n int) {
		if err := a.DB.QueryRow(ctx, `SELECT count(DISTINCT segid) FROM messages_search_idx`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := segments()
	const n = 64
	raws := make([][]byte, n)
	for i := range raws {
		raws[i] = fmt.Appendf(nil, "From: a@x.example\r\nSubject: note %d\r\n\r\nword%dword and more\r\n", i, i)
	}
	if err := a.Inbound().Seed(ctx, &mbs[0], raws); err != nil {
		t.Fatal(err)
	}
	if got := segments() - before; got != 1 {
		t.Errorf("%d index segments added by one commit of %d messages, want 1", got, n)
	}
	for _, i := range []int{0, 31, 63} {
		hits, err := a.Inbound().Search(ctx, inbound.Reader{WorkspaceID: a.WorkspaceID}, fmt.Sprintf("word%dword", i), 10)
		if err != nil || len(hits) != 1 || hits[0].Subject != fmt.Sprintf("note %d", i) {
			t.Errorf("search for message %d's word: %v %+v", i, err, hits)
		}
	}
}
