// Command import measures the audience import and the contacts search: a
// 10,000-row CSV (5 attributes, 2 tags per row) into an audience that
// already holds 100,000 members, and GET /v1/contacts?q= over those 100,000
// contacts (p99). Usage: go run ./bench/import [-pg postgres://...]
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mailroom/bench/internal/benchnode"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"mailroom/bench/internal/load"
)

func main() {
	pg := flag.String("pg", "", "PostgreSQL URL (default: embedded SQLite in a temp dir)")
	existing := flag.Int("n", 100000, "members already in the audience")
	runs := flag.Int("runs", 3, "timed imports of 10,000 new rows")
	dur := flag.Duration("d", 5*time.Second, "duration of the search run")
	flag.Parse()

	dir, _ := os.MkdirTemp("", "mailroom-bench-import")
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "mailroom.db")
	if *pg != "" {
		var drop func()
		db, drop = ownSchema(*pg)
		defer drop()
	}
	ctx := context.Background()
	node, err := benchnode.Start(ctx, benchnode.Options{Dir: dir, Env: map[string]string{"MAILROOM_DATABASE_URL": db}})
	if err != nil {
		panic(err)
	}
	defer node.Stop()
	a, key := node.App, node.Key
	base := "http://" + a.HTTPAddr()
	do := func(method, path, ct string, body []byte) []byte {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			panic(fmt.Sprintf("%s %s: %d %s", method, path, resp.StatusCode, b))
		}
		return b
	}
	var aud struct{ ID string }
	json.Unmarshal(do("POST", "/v1/audiences", "application/json", []byte(`{"name":"bench"}`)), &aud)
	path := "/v1/audiences/" + aud.ID + "/contacts"

	next := 0
	batch := func() []byte {
		var b bytes.Buffer
		b.WriteString("email,first_name,last_name,company,city,plan,tags\n")
		for range 10000 {
			n := strconv.Itoa(next)
			fmt.Fprintf(&b, "user%s@example.com,First%s,Last%s,Company %d,City %d,plan%d,\"t%d,bench\"\n", n, n, n, next%97, next%31, next%5, next%11)
			next++
		}
		return b.Bytes()
	}
	t0 := time.Now()
	for next < *existing {
		do("POST", path, "text/csv", batch())
	}
	fmt.Printf("seeded %d members in %s\n", *existing, time.Since(t0).Round(time.Millisecond))
	var worstImport time.Duration
	for i := range *runs {
		body := batch()
		t := time.Now()
		out := do("POST", path, "text/csv", body)
		el := time.Since(t)
		worstImport = max(worstImport, el)
		fmt.Printf("RESULT import 10,000 rows into %d members (%s), run %d: %.0f ms  %s", next-10000, a.DB.Dialect, i+1, float64(el)/1e6, out)
	}

	// Terms of every kind ?q= meets: common ones (thousands of matches, the
	// first page fills at once), rare ones (a handful of matches anywhere
	// in the workspace), none at all, pattern and FTS metacharacters, and
	// terms shorter than a trigram (docs/decisions.md, "Contacts search").
	// The seeded rows carry their names as merge attributes, so ?q= meets
	// the addresses (user<n>@example.com) and the empty names.
	terms := []struct{ kind, q string }{
		{"common", "example"}, {"common", "user1"}, {"common", "9@example"},
		{"rare", "user12345@"}, {"rare", "user99999@"}, {"rare", "user4242@"}, {"rare", "r77777"},
		{"none", "nobody-here"}, {"none", `50%_off "x" OR y*`},
		{"short", "e"}, {"short", "9@"}, {"short none", "zq"},
	}
	worst := map[bool]time.Duration{}
	for _, t := range terms {
		u := base + "/v1/contacts?q=" + url.QueryEscape(t.q)
		var page struct{ Contacts []json.RawMessage }
		json.Unmarshal(do("GET", "/v1/contacts?q="+url.QueryEscape(t.q), "", nil), &page)
		load.Run(1, 300*time.Millisecond, 200, load.JSONRequest("GET", u, key, nil))
		got := load.Run(1, *dur/time.Duration(len(terms)), 200, load.JSONRequest("GET", u, key, nil))
		fmt.Printf("RESULT GET /v1/contacts?q=%-20q %-10s over %d contacts (%s): first page %3d rows, p50 %6.2f ms, p99 %6.2f ms, %d requests, %d errors\n",
			t.q, t.kind, next, a.DB.Dialect, len(page.Contacts), float64(got.P50)/1e6, float64(got.P99)/1e6, got.Requests, got.Errors)
		indexed := !strings.HasPrefix(t.kind, "short")
		worst[indexed] = max(worst[indexed], got.P99)
	}
	if *runs > 0 {
		fmt.Printf("RESULT slowest import of 10,000 rows (%s): %.0f ms (ceiling 1000 ms)\n", a.DB.Dialect, float64(worstImport)/1e6)
	}
	fmt.Printf("RESULT terms shorter than 3 characters, worst p99 (%s): %.2f ms (no ceiling: no trigram serves them)\n", a.DB.Dialect, float64(worst[false])/1e6)
	fmt.Printf("RESULT GET /v1/contacts?q= over %d contacts, worst p99 of the indexed terms (%s): %.2f ms (ceiling 50 ms)\n",
		next, a.DB.Dialect, float64(worst[true])/1e6)
}

// ownSchema creates a schema of its own on the server at base and returns
// the URL that selects it (search_path), so the run leaves the database as
// it found it; drop removes the schema.
func ownSchema(base string) (string, func()) {
	admin, err := sql.Open("pgx", base)
	if err != nil {
		panic(err)
	}
	schema := "bench_import_" + strconv.Itoa(os.Getpid())
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		panic(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set("search_path", schema+",public") // public: where pg_trgm may already live
	u.RawQuery = q.Encode()
	return u.String(), func() {
		admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		admin.Close()
	}
}
