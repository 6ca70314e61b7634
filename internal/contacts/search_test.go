package contacts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"mailroom/internal/clock"
	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// searchSeed fills workspace ws1 with more contacts than scanFirst lets a
// listing test one by one (so a rare term goes through the trigram index)
// and ws2 with a few that match the same terms, and returns ws1's contacts.
func searchSeed(t *testing.T, db *store.DB) []Contact {
	t.Helper()
	ctx := context.Background()
	odd := []struct{ first, last string }{
		{"50%", "off_sale"}, {`say "hi"`, "o'brien"}, {`back\slash`, "a*b"}, {"AND", "OR NOT"},
		{"near(x", "col:umn"}, {"^caret", "{brace}"}, {"Zoë", "Ünal"}, {"日本語", "名前"}, {"a-b", "c+d"},
	}
	base := time.UnixMilli(1_700_000_000_000)
	var all []Contact
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1500 {
		c := Contact{ID: fmt.Sprintf("con_s%05d", i), WorkspaceID: "ws1", Email: fmt.Sprintf("user%d@example.com", i),
			FirstName: fmt.Sprintf("First%d", i), LastName: fmt.Sprintf("Last%d", i%300),
			Attributes: map[string]string{}, Tags: []string{},
			// Some share a created_at, so the id breaks ties.
			CreatedAt: base.Add(time.Duration(i/3) * time.Millisecond), UpdatedAt: base}
		if i%150 == 7 {
			o := odd[(i/150)%len(odd)]
			c.FirstName, c.LastName = o.first, o.last
		}
		deferContact(tx, c)
		all = append(all, c)
	}
	for i := range 40 {
		deferContact(tx, Contact{ID: fmt.Sprintf("con_o%05d", i), WorkspaceID: "ws2", Email: fmt.Sprintf("user%d@example.com", i),
			FirstName: "50%", LastName: "日本語", Attributes: map[string]string{}, Tags: []string{}, CreatedAt: base, UpdatedAt: base})
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return all
}

// want is the listing's rule said plainly: ws1's contacts whose lowercased
// "email first last" contains the lowercased term, newest first.
func want(all []Contact, term string) []string {
	var out []string
	for _, c := range all {
		if strings.Contains(searchText(c), strings.ToLower(term)) {
			out = append(out, c.ID)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return -strings.Compare(a, b) }) // ids grow with created_at here
	return out
}

// listAll pages through a ?q= listing with the cursor, as the API does.
func listAll(t *testing.T, s *Service, term string, limit int) []string {
	t.Helper()
	var out []string
	var pos *Position
	for {
		cs, err := s.List(context.Background(), "ws1", ListFilter{Q: term}, limit+1, pos)
		if err != nil {
			t.Fatalf("q=%q: %v", term, err)
		}
		n := min(len(cs), limit)
		for _, c := range cs[:n] {
			if c.WorkspaceID != "ws1" {
				t.Fatalf("q=%q answered a contact of %s", term, c.WorkspaceID)
			}
			out = append(out, c.ID)
		}
		if len(cs) <= limit {
			return out
		}
		last := cs[n-1]
		pos = &Position{At: last.CreatedAt.UnixMilli(), ID: last.ID}
	}
}

// TestSearchMatchesPlainSubstring: whichever way a listing goes (the scan
// of the newest contacts, the trigram index, the full scan of a short
// term), it answers exactly the contacts a plain substring test finds,
// in order, page after page, on either dialect; pattern characters, quotes
// and FTS operators are literal and never make an error.
func TestSearchMatchesPlainSubstring(t *testing.T) {
	db := testdb.Open(t)
	all := searchSeed(t, db)
	s := New(db, clock.Real{})
	terms := []string{
		"example", "user1", "first14", // common: the first scan fills the page
		"user1234@", "first1499", "last299", "user77@example.com first77 last77", // rare: through the index
		"50%", "%", "_", "%_", "f_s", `"`, `say "hi"`, `""`, "'", "o'brien", `\`, `back\slash`, "a*b", "*",
		"and", "or not", "near(", "col:umn", "^caret", "{brace}", "-", "+", "c+d",
		"zoë", "ZOË", "ünal", "日本", "日本語", "名", // non-ASCII, upper case
		"e", "7", "@", "9@", "zq", "名前", // shorter than a trigram
		"nobody-here", "zzz", strings.Repeat("x", MaxSearchTerm),
		"example.com first", // across the address and the names
	}
	for _, term := range terms {
		w := want(all, term)
		for _, limit := range []int{50, 7} {
			got := listAll(t, s, term, limit)
			if !slices.Equal(got, w) {
				t.Errorf("q=%q limit %d: %d contacts %v…, want %d %v…", term, limit, len(got), head(got), len(w), head(w))
			}
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// TestSearchIndexFollowsWrites: the trigram index changes in the
// transaction of the contact's write, so a rare term (read through it)
// finds a contact as soon as it is created or renamed, and never after it
// is renamed away, deleted or its transaction rolled back; on SQLite it
// survives a VACUUM (its rows are keyed by the contacts' rowids).
func TestSearchIndexFollowsWrites(t *testing.T) {
	db := testdb.Open(t)
	ctx := context.Background()
	all := searchSeed(t, db)
	s := New(db, clock.Real{})
	find := func(term string) []string { return listAll(t, s, term, 50) }

	c, err := s.Create(ctx, "ws1", NewContact{Email: "quokka@island.example", FirstName: "Rottnest"})
	if err != nil {
		t.Fatal(err)
	}
	if got := find("quokka@"); !slices.Equal(got, []string{c.ID}) {
		t.Fatalf("after create: %v", got)
	}
	email := "wombat@burrow.example"
	if _, err := s.Update(ctx, "ws1", c.ID, ContactPatch{Email: &email}); err != nil {
		t.Fatal(err)
	}
	if got := find("quokka@"); len(got) != 0 {
		t.Fatalf("old address still found after the change: %v", got)
	}
	if got := find("wombat@bur"); !slices.Equal(got, []string{c.ID}) {
		t.Fatalf("new address not found: %v", got)
	}

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := insertContact(ctx, tx, Contact{ID: "con_gone", WorkspaceID: "ws1", Email: "numbat@gone.example",
		Attributes: map[string]string{}, Tags: []string{}, CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := find("numbat"); len(got) != 0 {
		t.Fatalf("rolled-back contact found: %v", got)
	}

	if err := s.Delete(ctx, "ws1", c.ID); err != nil {
		t.Fatal(err)
	}
	if got := find("wombat@bur"); len(got) != 0 {
		t.Fatalf("deleted contact found: %v", got)
	}

	if db.Dialect == store.SQLite {
		// Delete some rows first so a renumbering VACUUM would show.
		if _, err := db.Exec(ctx, `DELETE FROM contacts WHERE id LIKE 'con_s000%'`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `VACUUM`); err != nil {
			t.Fatal(err)
		}
		all = slices.DeleteFunc(all, func(c Contact) bool { return strings.HasPrefix(c.ID, "con_s000") })
		for _, term := range []string{"user1234@", "first1499", "last299", "user10@"} {
			if got, w := find(term), want(all, term); !slices.Equal(got, w) {
				t.Errorf("after VACUUM q=%q: %v, want %v", term, got, w)
			}
		}
	}
}

// TestContainsIndexedUsesTheIndex: the index path really reads the
// trigram index (it is not a scan that happens to agree): on SQLite the
// FTS5 table answers alone; on PostgreSQL the GIN index can serve the
// predicate (the escaped LIKE stays indexable): with sequential scans off
// the plan names it. Whether the planner prefers it depends on the table's
// size, which bench/import measures.
func TestContainsIndexedUsesTheIndex(t *testing.T) {
	db := testdb.Open(t)
	ctx := context.Background()
	searchSeed(t, db)
	from, args := db.ContainsIndexed("contacts", "search", "user1234@")
	var n int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM `+from+` c`, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d rows for user1234@, want 1", n)
	}
	if db.Dialect == store.SQLite {
		// Empty the FTS5 table behind the triggers' back: the index path
		// must then find nothing, which a scan would not.
		if _, err := db.Exec(ctx, `INSERT INTO contacts_search (contacts_search) VALUES ('delete-all')`); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM `+from+` c`, args...).Scan(&n); err != nil || n != 0 {
			t.Fatalf("after emptying the index: %d rows, %v", n, err)
		}
		return
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN SELECT * FROM `+from+` c`, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if !strings.Contains(plan.String(), "contacts_search_trgm") {
		t.Fatalf("plan does not use the trigram index:\n%s", plan.String())
	}
}
