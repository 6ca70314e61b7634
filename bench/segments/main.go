// Command segments measures a segment's live count (GET
// /v1/segments/{id}?count=live does this count) over 100,000 contacts of
// an audience with 5 rules, on SQLite or PostgreSQL.
// Usage: go run ./bench/segments [-n 100000] [-pg postgres://...]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	benchload "mailroom/bench/internal/load"
	"mailroom/internal/clock"
	"mailroom/internal/contacts"
	"mailroom/internal/ids"
	"mailroom/internal/segments"
	"mailroom/internal/store"
)

func main() {
	pg := flag.String("pg", "", "PostgreSQL URL (default: embedded SQLite in a temp dir)")
	nflag := flag.Int("n", 100000, "contacts")
	runs := flag.Int("runs", 7, "counts to time")
	keep := flag.String("db", "", "SQLite file to keep the contacts in and reuse on the next run (for EXPLAIN)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the counts to this file")
	flag.Parse()
	ctx := context.Background()
	defer benchload.StartCPUProfile(*profile)()
	url := *pg
	if url == "" && *keep != "" {
		url = *keep
	} else if url == "" {
		dir, _ := os.MkdirTemp("", "mailroom-bench-segments")
		defer os.RemoveAll(dir)
		url = filepath.Join(dir, "mailroom.db")
	}
	db, err := store.Open(ctx, url)
	check(err)
	defer db.Close()
	check(db.Migrate(ctx))
	ws, aud := ids.New("ws"), ids.New("aud")
	if err := db.QueryRow(ctx, `SELECT workspace_id, id FROM audiences WHERE name = 'Bench'`).Scan(&ws, &aud); err == nil {
		fmt.Printf("reusing the contacts of audience %s\n", aud)
		measure(ctx, db, ws, aud, *nflag, *runs)
		return
	}
	load(ctx, db, ws, aud, *nflag)
	measure(ctx, db, ws, aud, *nflag, *runs)
}

// load writes n contacts, each a member of the audience.
func load(ctx context.Context, db *store.DB, ws, aud string, n int) {
	now := time.Now()
	_, err := db.Exec(ctx, `INSERT INTO audiences (id, workspace_id, name, created_at, updated_at) VALUES (?, ?, 'Bench', 1, 1)`, aud, ws)
	check(err)
	t0 := time.Now()
	r := rand.New(rand.NewPCG(7, 7))
	plans := []string{"free", "pro", "team", "enterprise"}
	domains := []string{"acme.com", "example.org", "mail.test", "b.io"}
	const chunk = 500
	for start := 0; start < n; start += chunk {
		check(db.InTx(ctx, func(tx *store.Tx) error {
			var cs, ms []string
			var ca, ma []any
			for i := start; i < min(start+chunk, n); i++ {
				id := fmt.Sprintf("ct_%08d", i)
				attrs, _ := json.Marshal(map[string]string{"plan": plans[r.IntN(4)], "seats": fmt.Sprint(r.IntN(200)), "city": "c" + fmt.Sprint(r.IntN(50))})
				var tags []string
				if r.IntN(3) == 0 {
					tags = append(tags, "vip")
				}
				if r.IntN(4) == 0 {
					tags = append(tags, "trial")
				}
				tj, _ := json.Marshal(append([]string{}, tags...))
				created := now.Add(-time.Duration(r.IntN(400*24)) * time.Hour).UnixMilli()
				cs = append(cs, "(?, ?, ?, ?, ?, ?, ?)")
				ca = append(ca, id, ws, fmt.Sprintf("p%d@%s", i, domains[r.IntN(4)]), string(attrs), string(tj), created, created)
				ms = append(ms, "(?, ?, ?, ?, ?, ?, ?)")
				st := "subscribed"
				if r.IntN(10) == 0 {
					st = "unsubscribed"
				}
				ma = append(ma, "mem_"+id, ws, aud, id, st, created, created)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO contacts (id, workspace_id, email, attributes, tags, created_at, updated_at) VALUES `+strings.Join(cs, ","), ca...); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO memberships (id, workspace_id, audience_id, contact_id, status, created_at, updated_at) VALUES `+strings.Join(ms, ","), ma...)
			return err
		}))
	}
	if db.Dialect == store.Postgres {
		_, _ = db.Exec(ctx, `ANALYZE contacts, memberships`)
	} else {
		_, _ = db.Exec(ctx, `ANALYZE`)
	}
	fmt.Printf("loaded %d contacts in %s (%s)\n", n, time.Since(t0).Round(time.Millisecond), db.Dialect)
}

// measure times the live count of a 5-rule segment of the audience.
func measure(ctx context.Context, db *store.DB, ws, aud string, n, runs int) {
	cs := contacts.New(db, clock.Real{})
	svc := segments.New(db, clock.Real{}, cs)
	seg, err := svc.Create(ctx, ws, segments.Input{Name: "Bench", AudienceID: aud, Rules: json.RawMessage(`[
		{"field":"status","op":"eq","value":"subscribed"},
		{"field":"email","op":"ends_with","value":"@acme.com"},
		{"field":"attributes.plan","op":"neq","value":"free"},
		{"field":"attributes.seats","op":"gt","value":"20"},
		{"field":"created_at","op":"within_days","value":365}]`)})
	check(err)
	var times, cpus []time.Duration
	var count int
	for range runs {
		t, c := time.Now(), benchload.ProcessCPU()
		s, err := svc.Get(ctx, ws, seg.ID, true)
		check(err)
		times = append(times, time.Since(t))
		cpus = append(cpus, benchload.ProcessCPU()-c)
		count = s.MemberCount
	}
	slices.Sort(times)
	slices.Sort(cpus)
	fmt.Printf("members counted: %d; runs: %v\n", count, times)
	// On a loaded machine the wall time mostly measures the wait for a
	// core; SQLite runs in this process, so its CPU time is the work.
	fmt.Printf("this process's CPU per count: median %s\n", cpus[len(cpus)/2].Round(time.Millisecond))
	fmt.Printf("count=live over %d contacts, 5 rules, %s: median %s (ceiling 200ms)\n", n, db.Dialect, times[len(times)/2].Round(time.Millisecond))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
