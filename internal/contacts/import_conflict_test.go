package contacts_test

import (
	"testing"
	"time"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testapp"
)

// TestImportConflict provokes 409 import_conflict end to end: an import
// has read that the workspace lacks an address (OnImportRead holds it
// there) when a contact with that address is created and committed. On
// PostgreSQL the import's insert then meets the unique index: the whole
// import rolls back (no member, no contact from it) and answers 409
// import_conflict; sent again, it succeeds. On SQLite the import holds the
// one writer from its first read, so the create waits for it and the
// conflict cannot happen: the create answers 409 contact_exists instead.
func TestImportConflict(t *testing.T) {
	a := testapp.Start(t)
	var aud struct{ ID string }
	if r := a.Do("POST", "/v1/audiences", map[string]any{"name": "race"}); r.Status != 201 {
		t.Fatalf("audience: %d %s", r.Status, r.Body)
	} else {
		r.Decode(t, &aud)
	}
	path := "/v1/audiences/" + aud.ID + "/contacts"
	rows := []map[string]any{{"email": "racer@example.com"}, {"email": "other@example.com", "tags": "x"}}

	read, release := make(chan struct{}), make(chan struct{})
	a.Contacts().OnImportRead(func() { close(read); <-release })
	imported := make(chan *testapp.Response, 1)
	go func() { imported <- a.Do("POST", path, rows) }()
	select {
	case <-read:
	case <-time.After(20 * time.Second):
		t.Fatal("the import never reached its read")
	}
	a.Contacts().OnImportRead(nil)
	created := make(chan *testapp.Response, 1)
	go func() { created <- a.Do("POST", "/v1/contacts", map[string]any{"email": "racer@example.com"}) }()

	if a.DB.Dialect == store.Postgres {
		// The import has only read: the create commits at once.
		if r := <-created; r.Status != 201 {
			t.Fatalf("create while the import is held: %d %s", r.Status, r.Body)
		}
		close(release)
		r := <-imported
		if r.Status != 409 || r.ErrCode() != "import_conflict" {
			t.Fatalf("import: %d %s, want 409 import_conflict", r.Status, r.Body)
		}
		if got := members(t, a, path); got != 0 {
			t.Fatalf("%d members after the refused import, want none", got)
		}
		if r := a.Do("GET", "/v1/contacts?lookup=other@example.com", nil); r.Status != 200 || len(contactIDs(t, r)) != 0 {
			t.Fatalf("the refused import left other@example.com: %s", r.Body)
		}
		r = a.Do("POST", path, rows)
		if r.Status != 201 {
			t.Fatalf("import sent again: %d %s", r.Status, r.Body)
		}
		var res struct{ Created, Imported int }
		r.Decode(t, &res)
		if res.Created != 2 || res.Imported != 2 {
			t.Fatalf("import sent again: %s", r.Body)
		}
		return
	}
	// SQLite: the create waits for the import's writer. Only a broken
	// import (one that read outside its writing transaction) lets it
	// through this wait; a correct one never fails on it.
	select {
	case r := <-created:
		t.Fatalf("create went through while the import held the writer: %d %s", r.Status, r.Body)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if r := <-imported; r.Status != 201 {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	if r := <-created; r.Status != 409 || r.ErrCode() != "contact_exists" {
		t.Fatalf("create after the import: %d %s, want 409 contact_exists", r.Status, r.Body)
	}
	if got := members(t, a, path); got != 2 {
		t.Fatalf("%d members, want 2", got)
	}
}

func members(t *testing.T, a *testapp.App, path string) int {
	t.Helper()
	r := a.Do("GET", path, nil)
	if r.Status != 200 {
		t.Fatalf("members: %d %s", r.Status, r.Body)
	}
	var p struct {
		ContactCount int `json:"contact_count"`
	}
	r.Decode(t, &p)
	return p.ContactCount
}

func contactIDs(t *testing.T, r *testapp.Response) []string {
	t.Helper()
	var p struct {
		Contacts []struct{ ID string } `json:"contacts"`
	}
	r.Decode(t, &p)
	out := []string{}
	for _, c := range p.Contacts {
		out = append(out, c.ID)
	}
	return out
}
