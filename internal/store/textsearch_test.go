package store_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"mailroom/internal/store"
)

// TestExcerpt: the passage holding the most of the words, from a few words
// before its first match, "…" where the text goes on, case folded, whole
// words only, a repeated word counted once, and the start when nothing
// matches.
func TestExcerpt(t *testing.T) {
	long := strings.Repeat("filler ", 40)
	for _, c := range []struct {
		text  string
		words []string
		want  string
	}{
		{"Shall we meet at the ferry?", []string{"ferry"}, "Shall we meet at the ferry?"},
		{long + "the ferry\n leaves  at noon " + long, []string{"ferry"},
			"…filler filler the ferry leaves at noon filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler…"},
		// The window with both words wins over an earlier one with one.
		{"noon " + long + "ferry at noon " + long, []string{"ferry", "noon"},
			"…filler filler filler ferry at noon filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler…"},
		{"FERRY " + long, []string{"ferry"}, "FERRY filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler…"},
		{"ferryman and ferries", []string{"ferry"}, "ferryman and ferries"},
		{long, []string{"ferry", "ferry"}, "filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler filler…"},
		{"", []string{"ferry"}, ""},
		{"café au lait, Café!", []string{"café"}, "café au lait, Café!"},
	} {
		if got := store.Excerpt(c.text, c.words); got != c.want {
			t.Errorf("Excerpt(%.40q, %q)\n got %q\nwant %q", c.text, c.words, got, c.want)
		}
	}
}

// TestTextSearchCommonWords (SQLite): a word that commonHits rows hold
// ranks nothing. Alone, its hits come newest first with score 0 (bm25
// put the older subject hit first); beside a rare word, the rare word
// ranks (its subject hit first, the common word's subject hits no help).
func TestTextSearchCommonWords(t *testing.T) {
	db := open(t)
	if db.Dialect != store.SQLite {
		t.Skip("the common-word rule is SQLite's (bm25); PostgreSQL ranks with ts_rank")
	}
	ctx := t.Context()
	for _, q := range []string{
		`CREATE TABLE notes (id TEXT PRIMARY KEY, subject TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL)`,
		`CREATE VIRTUAL TABLE notes_search USING fts5(subject, body, content = '', contentless_delete = 1)`,
		`CREATE TRIGGER notes_search_insert AFTER INSERT ON notes BEGIN
			INSERT INTO notes_search (rowid, subject, body) VALUES (new.rowid, new.subject, new.body); END`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	err := db.InTx(ctx, func(tx *store.Tx) error {
		for i := range store.CommonHits + 10 {
			subject, body := "note", "harbour quiet morning"
			switch i {
			case 3:
				subject = "harbour kestrel" // the oldest kestrel, in the subject
				body = "kestrel"
			case 4, store.CommonHits + 5:
				body += " kestrel"
			case store.CommonHits + 8:
				subject = "harbour" // the newer subject hit for harbour
			}
			if _, err := tx.Exec(ctx, `INSERT INTO notes (id, subject, body, at) VALUES (?, ?, ?, ?)`, fmt.Sprintf("n%05d", i), subject, body, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ix := store.TextIndex{Table: "notes", Key: "id", Columns: []string{"subject", "body"}, Excerpt: "body"}
	search := func(q string) (ids []string, scores []float64) {
		e, ok, err := db.TextSearch(ctx, ix, "t.id", store.Expr{}, q, "t.at DESC, t.id DESC", 3)
		if err != nil || !ok {
			t.Fatal(q, ok, err)
		}
		rows, err := db.TextQuery(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, excerpt string
			var score float64
			if err := rows.Scan(&id, &score, &excerpt); err != nil {
				t.Fatal(err)
			}
			ids, scores = append(ids, id), append(scores, score)
		}
		return ids, scores
	}
	n := func(i int) string { return fmt.Sprintf("n%05d", i) }
	if ids, scores := search("Harbour"); !slices.Equal(ids, []string{n(store.CommonHits + 9), n(store.CommonHits + 8), n(store.CommonHits + 7)}) || !slices.Equal(scores, []float64{0, 0, 0}) {
		t.Errorf("harbour (common): %v %v, want the newest first, score 0", ids, scores)
	}
	ids, scores := search("harbour kestrel")
	if !slices.Equal(ids, []string{n(3), n(store.CommonHits + 5), n(4)}) || scores[0] <= scores[1] || scores[2] <= 0 {
		t.Errorf("harbour kestrel: %v %v, want kestrel's subject hit first", ids, scores)
	}
	if ids, _ := search("kestrel"); !slices.Equal(ids, []string{n(3), n(store.CommonHits + 5), n(4)}) {
		t.Errorf("kestrel (rare): %v", ids)
	}
}
