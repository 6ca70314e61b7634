// Command nodes checks the first step of the scaling model
// (docs/scaling.md): the same work on one node and on two nodes sharing
// one PostgreSQL database. For each node count it creates a fresh
// database on the server, starts the nodes in this process (each its own
// River client, delivery lanes and HTTP server), and relays to one SMTP
// sink that counts Message-IDs:
//
//  1. -sends API sends to the workspace owner, spread over the nodes'
//     APIs in turn, each delivered (RSA-2048 DKIM);
//  2. one broadcast to -members members, created on the first node and
//     sent through the last one.
//
// Each phase must bring every Message-ID to the sink exactly once (every
// accepted email's id among them), or the run fails. It prints each
// phase's rate, the database's cost per item (bench/internal/dbcost) and
// the WAL and transactions per second the server took; the last line is
// the two nodes' rates beside one node's.
//
//	go run ./bench/nodes -pg postgres://postgres@127.0.0.1:5432/test?sslmode=disable [-sends 4000] [-members 4000]
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"mailroom/bench/internal/benchkeys"
	"mailroom/bench/internal/benchnode"
	"mailroom/bench/internal/benchsink"
	"mailroom/bench/internal/dbcost"
	"mailroom/internal/ids"
	"mailroom/internal/store"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nodes:", err)
		os.Exit(1)
	}
}

// rates are one node count's results: API sends and broadcast recipients
// at the sink per second.
type rates struct{ sends, recipients float64 }

func run() error {
	pg := flag.String("pg", "", "PostgreSQL URL of a database to connect to; each run creates and drops its own database on that server")
	sends := flag.Int("sends", 4000, "API sends (to the workspace owner, each delivered)")
	members := flag.Int("members", 4000, "broadcast audience members")
	counts := flag.String("nodes", "1,2", "node counts to measure, in order")
	flag.Parse()
	if *pg == "" {
		return fmt.Errorf("-pg is required: two nodes share a PostgreSQL database")
	}
	ctx := context.Background()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	got := map[int]rates{}
	var order []int
	for _, c := range strings.Split(*counts, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || k < 1 {
			return fmt.Errorf("-nodes: %q is not a node count", c)
		}
		r, err := measure(ctx, *pg, k, *sends, *members, key)
		if err != nil {
			return fmt.Errorf("%d nodes: %w", k, err)
		}
		got[k], order = r, append(order, k)
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d node(s) %.0f sends/s, %.0f recipients/s (%.2f and %.2f of the first)", k, got[k].sends, got[k].recipients,
			got[k].sends/got[order[0]].sends, got[k].recipients/got[order[0]].recipients))
	}
	fmt.Printf("nodes on one PostgreSQL, nothing lost or sent twice: %s\n", strings.Join(parts, "; "))
	return nil
}

// measure runs both phases on k nodes over a fresh database.
func measure(ctx context.Context, base string, k, sends, members int, key *rsa.PrivateKey) (rates, error) {
	dbURL, drop, err := freshDatabase(ctx, base)
	if err != nil {
		return rates{}, err
	}
	defer drop()
	sink, err := benchsink.Start()
	if err != nil {
		return rates{}, err
	}
	defer sink.Close()
	sink.Track()
	var nodes []*benchnode.Node
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	for range k { // one after the other: the first migrates the new database
		n, err := benchnode.Start(ctx, benchnode.Options{PG: dbURL, Env: map[string]string{"MAILROOM_OUTBOUND": "smtp://" + sink.Addr}})
		if err != nil {
			return rates{}, err
		}
		n.Delivery().SetKeys(benchkeys.Keys{Key: key})
		nodes = append(nodes, n)
	}
	// Every node serves the first node's workspace (each also made its own).
	apis := make([]*benchnode.Node, k)
	for i, n := range nodes {
		c := *n
		c.Key, c.Workspace = nodes[0].Key, nodes[0].Workspace
		apis[i] = &c
	}
	cost := dbcost.New(nodes[0].DB, "")
	fmt.Printf("%d node(s), a fresh database\n", k)

	// Phase 1: API sends spread over the nodes.
	before, err := cost.Baseline(ctx)
	if err != nil {
		return rates{}, err
	}
	start := time.Now()
	accepted, err := sendAll(apis, sends)
	if err != nil {
		return rates{}, err
	}
	sendRate, err := phaseEnd(ctx, sink, cost, before, start, len(accepted), sends, "delivered API send", accepted)
	if err != nil {
		return rates{}, err
	}

	// Phase 2: a broadcast created on the first node, sent through the last.
	bcID, err := broadcast(ctx, apis[0], members)
	if err != nil {
		return rates{}, err
	}
	if before, err = cost.Baseline(ctx); err != nil {
		return rates{}, err
	}
	start = time.Now()
	if _, err := apis[k-1].Call("POST", "/v1/broadcasts/"+bcID+"/send", map[string]any{}); err != nil {
		return rates{}, err
	}
	recipientRate, err := phaseEnd(ctx, sink, cost, before, start, members, sends+members, "broadcast recipient", accepted)
	if err != nil {
		return rates{}, err
	}
	return rates{sendRate, recipientRate}, nil
}

// phaseEnd waits until the sink holds total messages (items of them this
// phase's), then checks that every Message-ID arrived once (and each
// accepted API send's among them) once the database has settled, and
// prints the phase's rate and cost.
func phaseEnd(ctx context.Context, sink *benchsink.Sink, cost *dbcost.Probe, before dbcost.Snapshot, start time.Time, items, total int, unit string, accepted []string) (float64, error) {
	for sink.Others.Load() < int64(total) {
		if time.Since(start) > 20*time.Minute {
			return 0, fmt.Errorf("%d of %d messages at the sink after 20 minutes", sink.Others.Load(), total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	at, err := cost.Take(ctx)
	if err != nil {
		return 0, err
	}
	after, err := cost.Settle(ctx, 30*time.Second) // late repeats would arrive meanwhile
	if err != nil {
		return 0, err
	}
	ids := sink.IDs()
	twice := 0
	for _, c := range ids {
		if c > 1 {
			twice++
		}
	}
	lost := 0
	for _, id := range accepted {
		if ids["<"+id+"@mailroom.localhost>"] == 0 {
			lost++
		}
	}
	if twice > 0 || lost > 0 || len(ids) != total {
		return 0, fmt.Errorf("%s phase: %d distinct Message-IDs at the sink for %d emails, %d arrived more than once, %d accepted API sends missing", unit, len(ids), total, twice, lost)
	}
	compacted, err := cost.Compact(ctx)
	if err != nil {
		return 0, err
	}
	rate := float64(items) / elapsed.Seconds()
	secs := elapsed.Seconds()
	fmt.Printf("  %s: %d in %v, %.0f/s; %d Message-IDs at the sink, each once\n", unit, items, elapsed.Round(time.Millisecond), rate, len(ids))
	fmt.Printf("  the server meanwhile: %.1f MB/s of WAL (the cluster's), %.0f transactions/s in this database\n",
		float64(at.WAL-before.WAL)/1e6/secs, float64(at.Commits-before.Commits)/secs)
	var b strings.Builder
	dbcost.Report(&b, unit, items, before, after, compacted)
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		fmt.Println("  " + l)
	}
	return rate, nil
}

// sendAll makes n API sends over 16 connections, the i-th through node
// i mod len(nodes), and returns the accepted email ids.
func sendAll(nodes []*benchnode.Node, n int) ([]string, error) {
	var mu sync.Mutex
	var accepted []string
	var next atomic.Int64
	var firstErr error
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				m, err := nodes[i%len(nodes)].Call("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.localhost",
					"to": benchnode.Owner, "subject": fmt.Sprint("Send ", i), "text": "hello " + strconv.Itoa(i)})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				} else if id, _ := m["id"].(string); id != "" {
					accepted = append(accepted, id)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return accepted, firstErr
}

// broadcast loads members into a new audience (as bench/broadcast does)
// and creates a broadcast to it: bench/broadcast's 15 KB html body with
// three merge fields.
func broadcast(ctx context.Context, api *benchnode.Node, n int) (string, error) {
	aud, err := api.Call("POST", "/v1/audiences", map[string]any{"name": "Everyone"})
	if err != nil {
		return "", err
	}
	audID := aud["id"].(string)
	for start := 0; start < n; start += 500 {
		err := api.DB.InTx(ctx, func(tx *store.Tx) error {
			var cs, ms []string
			var ca, ma []any
			now := time.Now().UnixMilli()
			for i := start; i < min(n, start+500); i++ {
				id := fmt.Sprintf("ct_bench%08d", i)
				attrs, _ := json.Marshal(map[string]string{"first_name": fmt.Sprint("Name", i), "plan": []string{"free", "pro"}[i%2], "city": fmt.Sprint("City", i%97)})
				cs = append(cs, "(?, ?, ?, ?, ?, ?)")
				ca = append(ca, id, api.Workspace.ID, fmt.Sprintf("m%07d@example.net", i), string(attrs), now, now)
				ms = append(ms, "(?, ?, ?, ?, 'subscribed', ?, ?)")
				ma = append(ma, "mem_"+id, api.Workspace.ID, audID, id, now, now)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO contacts (id, workspace_id, email, attributes, created_at, updated_at) VALUES `+strings.Join(cs, ","), ca...); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO memberships (id, workspace_id, audience_id, contact_id, status, created_at, updated_at) VALUES `+strings.Join(ms, ","), ma...)
			return err
		})
		if err != nil {
			return "", err
		}
	}
	html := "<html><body><p>Hello {{ first_name }}, news for {{ city }} ({{ plan }} plan).</p>" +
		strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n", 180) + "</body></html>"
	bc, err := api.Call("POST", "/v1/broadcasts", map[string]any{"from": "News <onboarding@mailroom.localhost>", "audience_id": audID,
		"subject": "News for {{ first_name }}", "html": html})
	if err != nil {
		return "", err
	}
	if bc["ready"] != true {
		return "", fmt.Errorf("broadcast not ready: %v", bc["problems"])
	}
	return bc["id"].(string), nil
}

// freshDatabase creates a database on base's server and returns its URL
// and a func that drops it.
func freshDatabase(ctx context.Context, base string) (string, func(), error) {
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	name := "scale_" + strings.ToLower(strings.TrimPrefix(ids.New("b"), "b_"))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return "", nil, err
	}
	drop := func() {
		admin.ExecContext(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		admin.Close()
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}
