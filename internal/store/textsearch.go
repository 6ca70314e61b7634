package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"unicode"
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
	Excerpt string   // the column excerpts are cut from (one of Columns)
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
// order tie (SQL over t, e.g. "t.received_at DESC"). It selects cols (SQL
// over t), then search_rank (higher is better) and search_excerpt (a plain
// text passage of ix.Excerpt around the words, no markup). where narrows
// the rows (SQL over t; empty for all). ok is false when q holds no word,
// and then there is nothing to ask.
//
// Only the rankCandidates newest hits are ranked (SQLite: by rowid, the
// order rows were written; PostgreSQL: in the order tie). SQLite ranks
// with bm25 (column weights 10, 4, 1, 1) and leaves search_excerpt empty
// for TextExcerpts (snippet()); PostgreSQL ranks with ts_rank over the
// weighted vector and cuts excerpts with ts_headline, for the page only.
func (db *DB) TextSearch(ix TextIndex, cols string, where Expr, q, tie string, limit int) (Expr, bool) {
	words := SearchWords(q)
	if len(words) == 0 {
		return Expr{}, false
	}
	if where.SQL == "" {
		where = Expr{SQL: "1=1"}
	}
	fts := ix.Table + "_search"
	if db.Dialect == Postgres {
		// Each word is letters and digits only, quoted as one lexeme.
		query := "'" + strings.Join(words, "' & '") + "'"
		return Cat(`WITH q AS (SELECT to_tsquery('simple', `, Val(query), `) AS q),
			cand AS (SELECT t.`+ix.Key+` AS key FROM `+ix.Table+` t, q
				WHERE t.search_vector @@ q.q AND (`, where, `) ORDER BY `+tie+` LIMIT `, Val(rankCandidates), `),
			hits AS (SELECT t.`+ix.Key+` AS key, ts_rank(t.search_vector, q.q) AS rank FROM cand JOIN `+ix.Table+` t ON t.`+ix.Key+` = cand.key, q
				ORDER BY rank DESC, `+tie+` LIMIT `, Val(limit), `)
			SELECT `+cols+`, hits.rank AS search_rank,
				ts_headline('simple', COALESCE(t.`+ix.Excerpt+`, ''), q.q, 'MaxWords=30, MinWords=12, ShortWord=0, StartSel="", StopSel="", MaxFragments=1')
			FROM hits JOIN `+ix.Table+` t ON t.`+ix.Key+` = hits.key CROSS JOIN q
			ORDER BY hits.rank DESC, `+tie), true
	}
	weights := make([]string, len(ix.Columns))
	for i := range ix.Columns {
		weights[i] = "1.0"
		if i < 2 {
			weights[i] = []string{"10.0", "4.0"}[i]
		}
	}
	bm25 := `bm25(` + fts + `, ` + strings.Join(weights, ", ") + `)`
	match := Val(ftsQuery(words))
	// Only the rankCandidates newest hits in where are ranked, and the
	// excerpts are cut for the page alone, by TextExcerpts.
	return Cat(`WITH floor AS (SELECT COALESCE((SELECT `+fts+`.rowid FROM `+fts+` CROSS JOIN `+ix.Table+` t ON t.rowid = `+fts+`.rowid
			WHERE `+fts+` MATCH `, match, ` AND (`, where, `) ORDER BY `+fts+`.rowid DESC LIMIT 1 OFFSET `, Val(rankCandidates-1), `), 0) AS r)
		SELECT `+cols+`, -`+bm25+` AS search_rank, '' AS search_excerpt
		FROM `+fts+` CROSS JOIN `+ix.Table+` t ON t.rowid = `+fts+`.rowid
		WHERE `+fts+` MATCH `, match, ` AND `+fts+`.rowid >= (SELECT r FROM floor) AND (`, where, `)
		ORDER BY `+bm25+`, `+tie+` LIMIT `, Val(limit)), true
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

// TextExcerpts cuts the excerpts of the hits keys (values of ix.Key) that
// TextSearch left empty: on SQLite snippet() of each, one hit at a time
// (in the ranking query it would run for every hit); on PostgreSQL
// nothing, ts_headline having cut them for the page.
func (db *DB) TextExcerpts(ctx context.Context, ix TextIndex, q string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	words := SearchWords(q)
	if db.Dialect == Postgres || len(words) == 0 {
		return out, nil
	}
	col := 0
	for i, c := range ix.Columns {
		if c == ix.Excerpt {
			col = i
		}
	}
	fts := ix.Table + "_search"
	for _, k := range keys {
		var ex string
		err := db.QueryRow(ctx, `SELECT snippet(`+fts+`, `+strconv.Itoa(col)+`, '', '', '…', 24) FROM `+fts+`
			WHERE `+fts+` MATCH ? AND `+fts+`.rowid = (SELECT rowid FROM `+ix.Table+` WHERE `+ix.Key+` = ?)`, ftsQuery(words), k).Scan(&ex)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		out[k] = ex
	}
	return out, nil
}
