package store

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// TextIndex names a table's full-text index, which the migrations create
// under one name in both dialects, <Table>_search: an FTS5 table over
// Columns (external content keyed by rowid) on SQLite; a generated
// tsvector column search_vector with a GIN index of that name on
// PostgreSQL, Columns weighted A, B, C, D in order.
type TextIndex struct {
	Table   string   // the indexed table, aliased t in the query
	Key     string   // its primary key column
	Columns []string // the indexed columns, most important first
	Excerpt string   // the column (or SQL over the row) excerpts are cut from
}

// Text search limits: a query's words beyond maxSearchWords are ignored,
// and a word is cut at maxSearchWord bytes.
const (
	maxSearchWords = 16
	maxSearchWord  = 100
)

// SearchWords splits q into the words TextSearch looks for: runs of
// letters and digits, lowercased. Everything else (quotes, *, -, :, NEAR,
// parentheses) only separates words, so no part of q is ever an operator.
func SearchWords(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) > maxSearchWords {
		words = words[:maxSearchWords]
	}
	for i, w := range words {
		if len(w) > maxSearchWord {
			w = strings.ToValidUTF8(w[:maxSearchWord], "")
			words[i] = w
		}
	}
	return words
}

// TextSearch is a query, with its arguments, for at most limit rows of the
// indexed table holding every word of q (SearchWords: whole words, case
// folded, no stemming), best ranked first and, at equal rank, in the
// order tie (terms over t, each an expression without a comma and an
// optional direction, e.g. "t.received_at DESC, t.id DESC"). It selects
// cols (SQL over t), then search_rank (higher is better) and
// search_excerpt, left empty for TextExcerpts. where narrows the rows (SQL over t; empty for
// all). ok is false when q holds no word, and then there is nothing to ask.
//
// Only the rankCandidates newest hits are ranked (SQLite: by rowid, the
// order rows were written; PostgreSQL: in the order tie), in one pass
// over them, and cols are read for the page alone. SQLite ranks with bm25
// (column weights 10, 4, 1, 1) over the query's rare words (commonWords),
// PostgreSQL with ts_rank over the weighted vector and every word.
func (db *DB) TextSearch(ctx context.Context, ix TextIndex, cols string, where Expr, q, tie string, limit int) (e Expr, ok bool, err error) {
	words := SearchWords(q)
	if len(words) == 0 {
		return Expr{}, false, nil
	}
	if where.SQL == "" {
		where = Expr{SQL: "1=1"}
	}
	fts := ix.Table + "_search"
	if db.Dialect == Postgres {
		// Each word is letters and digits only, quoted as one lexeme.
		// The tsquery stands in each WHERE, not in a CTE, so that the
		// planner sees its words (TextQuery plans each search anew): a word
		// in every row walks the newest rows by the tie's index and stops
		// at the window, a rare one reads its few rows from the GIN index.
		query := "'" + strings.Join(words, "' & '") + "'"
		return Cat(`WITH cand AS (SELECT t.`+ix.Key+` AS key FROM `+ix.Table+` t
				WHERE t.search_vector @@ to_tsquery('simple', `, Val(query), `) AND (`, where, `) ORDER BY `+tie+` LIMIT `, Val(rankCandidates), `),
			hits AS (SELECT t.`+ix.Key+` AS key, ts_rank(t.search_vector, to_tsquery('simple', `, Val(query), `)) AS rank
				FROM cand JOIN `+ix.Table+` t ON t.`+ix.Key+` = cand.key ORDER BY rank DESC, `+tie+` LIMIT `, Val(limit), `)
			SELECT `+cols+`, hits.rank AS search_rank, '' AS search_excerpt
			FROM hits JOIN `+ix.Table+` t ON t.`+ix.Key+` = hits.key
			ORDER BY hits.rank DESC, `+tie), true, nil
	}
	rare, err := db.rareWords(ctx, fts, words)
	if err != nil {
		return Expr{}, false, err
	}
	weights := make([]string, len(ix.Columns))
	for i := range ix.Columns {
		weights[i] = "1.0"
		if i < 2 {
			weights[i] = []string{"10.0", "4.0"}[i]
		}
	}
	// The tie's terms are read with each candidate's row, which the scope
	// reads anyway, rather than looked up again to sort the window.
	var keys, order []string
	for i, term := range strings.Split(tie, ",") {
		expr, dir, _ := strings.Cut(strings.TrimSpace(term), " ")
		k := "k" + strconv.Itoa(i)
		keys, order = append(keys, expr+" AS "+k), append(order, strings.TrimSpace(k+" "+dir))
	}
	// FTS5 hands the hits newest first and stops at the window.
	cand := func(rank string) Expr {
		return Cat(`cand AS (SELECT `+fts+`.rowid AS r, `+rank+` AS rank, `+strings.Join(keys, ", ")+` FROM `+fts+` CROSS JOIN `+ix.Table+` t ON t.rowid = `+fts+`.rowid
			WHERE `+fts+` MATCH `, Val(ftsQuery(words)), ` AND (`, where, `) ORDER BY `+fts+`.rowid DESC LIMIT `, Val(rankCandidates), `)`)
	}
	page := `SELECT ` + cols + `, 0.0 - hits.rank AS search_rank, '' AS search_excerpt
		FROM hits CROSS JOIN ` + ix.Table + ` t ON t.rowid = hits.r
		ORDER BY hits.rank, ` + tie
	bm25 := `bm25(` + fts + `, ` + strings.Join(weights, ", ") + `)`
	switch {
	case len(rare) == len(words):
		// bm25 runs once per candidate (its per-word document counts once
		// per query, over the few rows that hold a rare word).
		return Cat(`WITH `, cand(bm25), `,
			hits AS (SELECT cand.r, cand.rank FROM cand ORDER BY cand.rank, `+strings.Join(order, ", ")+` LIMIT `, Val(limit), `)
			`+page), true, nil
	case len(rare) == 0:
		// Every word is common: nothing ranks one hit above another, and
		// they come newest first (the tie), each with rank 0.
		return Cat(`WITH `, cand("0.0"), `,
			hits AS (SELECT cand.r, cand.rank FROM cand ORDER BY `+strings.Join(order, ", ")+` LIMIT `, Val(limit), `)
			`+page), true, nil
	}
	// bm25 over the rare words alone, read by a second FTS5 cursor over the
	// window's rowids (materialized: a cursor per candidate would count
	// the words' documents again for each).
	return Cat(`WITH `, cand("0.0"), `,
		scored AS MATERIALIZED (SELECT rowid AS r, `+bm25+` AS rank FROM `+fts+`
			WHERE `+fts+` MATCH `, Val(ftsQuery(rare)), ` AND rowid >= (SELECT MIN(r) FROM cand) AND rowid <= (SELECT MAX(r) FROM cand)),
		hits AS (SELECT cand.r, scored.rank FROM cand JOIN scored ON scored.r = cand.r ORDER BY scored.rank, `+strings.Join(order, ", ")+` LIMIT `, Val(limit), `)
		`+page), true, nil
}

// commonHits is how many rows make a word common. bm25 weighs a word by
// how few rows hold it, and counting them walks every one (11 ms for a
// word in each of 100,000 messages, under load). A common word's weight
// is small (FTS5's floor, 1e-6, once over half the rows hold it), so it is
// left out of the rank: it still selects the hits, the query's rare words
// rank them, and when every word is common the hits come newest first.
// Telling a word common walks at most this many of its rows (0.3 ms).
const commonHits = 5_000

// rareWords is the words (of a query) that fewer than commonHits rows of
// the FTS5 table fts hold; counting stops at commonHits.
func (db *DB) rareWords(ctx context.Context, fts string, words []string) ([]string, error) {
	var rare []string
	for _, w := range words {
		var n int
		if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM `+fts+` WHERE `+fts+` MATCH ? LIMIT ?)`,
			ftsQuery([]string{w}), commonHits).Scan(&n); err != nil {
			return nil, err
		}
		if n < commonHits {
			rare = append(rare, w)
		}
	}
	return rare, nil
}

// TextQuery runs a TextSearch query on the reader pool. On PostgreSQL it
// is planned for its words every time (pgx's unnamed statement): a
// prepared statement's generic plan cannot tell a word in every row from
// one in none, and walked a workspace's whole index for a rare word
// (350 ms over 100,000 messages, where the GIN index answers in 3).
func (db *DB) TextQuery(ctx context.Context, e Expr) (*sql.Rows, error) {
	if db.Dialect == Postgres {
		return db.R.QueryContext(ctx, db.Rebind(e.SQL), append([]any{pgx.QueryExecModeExec}, e.Args...)...)
	}
	return db.Query(ctx, e.SQL, e.Args...)
}

// ftsQuery is words as an FTS5 query: each a quoted phrase, all required.
func ftsQuery(words []string) string {
	phrases := make([]string, len(words))
	for i, w := range words {
		phrases[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(phrases, " ")
}

// rankCandidates is how many of the newest hits are ranked: a word in
// every one of 100,000 messages cost half a second to rank them all.
const rankCandidates = 1000

// TextExcerpts cuts the excerpts of the hits keys (values of ix.Key) from
// their ix.Excerpt column, in one read (Excerpt): the same on both
// dialects. FTS5's snippet() cost a full-text query per hit, which for a
// common word seeks through the whole index each time.
func (db *DB) TextExcerpts(ctx context.Context, ix TextIndex, q string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	words := SearchWords(q)
	if len(words) == 0 || len(keys) == 0 {
		return out, nil
	}
	args, in := PaddedIn(nil, keys)
	rows, err := db.Query(ctx, `SELECT `+ix.Key+`, COALESCE(`+ix.Excerpt+`, '') FROM `+ix.Table+` WHERE `+ix.Key+` IN (`+in+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, text string
		if err := rows.Scan(&k, &text); err != nil {
			return nil, err
		}
		out[k] = Excerpt(text, words)
	}
	return out, rows.Err()
}

// excerptWords is how many words an excerpt holds.
const excerptWords = 24

// Excerpt is the passage of text of at most excerptWords words that holds
// the most of words (SearchWords of a query: the first such passage, from
// a few words before its first match), its spaces folded, with "…" where
// text goes on before or after it. Words are split as SearchWords splits
// them and compared case-folded, as both indexes split and fold the text.
// A text holding none of words gives its start.
func Excerpt(text string, words []string) string {
	type token struct{ start, end, word int } // word: index in words, or -1
	var toks []token
	counts := make([]int, len(words))
	distinct, best, bestLast := 0, 0, -1 // distinct words in the window ending at the last token
	want := 0
	for i, w := range words {
		if !slices.Contains(words[:i], w) {
			want++
		}
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += size
			continue
		}
		j := i + size
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			j += size
		}
		if best == want && len(toks) > bestLast+excerptWords {
			break // enough read to place the window, and one token more
		}
		tok := token{start: i, end: j, word: -1}
		for _, w := range words {
			if strings.EqualFold(text[i:j], w) {
				tok.word = slices.Index(words, w) // repeats count as one word
				break
			}
		}
		if n := len(toks); n >= excerptWords { // the oldest token leaves the window
			if old := toks[n-excerptWords]; old.word >= 0 {
				if counts[old.word]--; counts[old.word] == 0 {
					distinct--
				}
			}
		}
		toks = append(toks, tok)
		if tok.word >= 0 {
			if counts[tok.word]++; counts[tok.word] == 1 {
				distinct++
			}
		}
		if distinct > best {
			best, bestLast = distinct, len(toks)-1
		}
		i = j
	}
	if len(toks) == 0 {
		return ""
	}
	first := 0
	if best > 0 {
		// The window's first match, and the window starting a few words
		// before it that still holds the last.
		f := max(0, bestLast-excerptWords+1)
		for toks[f].word < 0 {
			f++
		}
		first = max(0, bestLast-excerptWords+1, min(f-3, len(toks)-excerptWords))
	}
	last := min(len(toks), first+excerptWords) - 1
	from, to := toks[first].start, toks[last].end
	if first == 0 {
		from = 0
	}
	if last == len(toks)-1 {
		to = len(text)
	}
	out := strings.Join(strings.Fields(text[from:to]), " ")
	if first > 0 {
		out = "…" + out
	}
	if last < len(toks)-1 {
		out += "…"
	}
	return out
}
