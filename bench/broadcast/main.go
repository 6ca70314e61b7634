// Command broadcast measures a broadcast end to end: an in-process node on
// SQLite (or PostgreSQL with -pg) sends one broadcast to N members (a
// 15 KB html body with 3 merge fields, RSA-2048 DKIM) through the relay
// transport to an SMTP sink on loopback, while a transactional send is
// accepted every 100 ms. It reports recipients at the sink per second
// from the send call to the last one, the process's peak RSS, and the
// accept-to-sink p99 of the transactional sends, and what the broadcast
// cost the database per recipient (bench/internal/dbcost: bytes, rows per
// table; on PostgreSQL tuples inserted and updated, commits, WAL). The
// last line is the headline.
//
//	go run ./bench/broadcast [-n 100000] [-pg postgres://...] [-dir DIR]
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"mailroom/bench/internal/benchkeys"
	"mailroom/bench/internal/benchnode"
	"mailroom/bench/internal/benchsink"
	"mailroom/bench/internal/dbcost"
	benchload "mailroom/bench/internal/load"
	"mailroom/internal/broadcasts"
	"mailroom/internal/store"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "broadcast:", err)
		os.Exit(1)
	}
}

func run() error {
	n := flag.Int("n", 100000, "audience members")
	pg := flag.String("pg", "", "PostgreSQL URL (default: embedded SQLite in a temp dir)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the run to this file")
	conc := flag.Int("concurrency", 0, "MAILROOM_DELIVERY_CONCURRENCY (0: the default; the marketing lane gets as many slots)")
	libc := flag.String("libcrypto", "auto", "MAILROOM_LIBCRYPTO: auto (RSA signatures by libcrypto where it loads) or off (crypto/rsa)")
	progressEvery := flag.Duration("progress", 0, "print the rate at the sink and the CPU use this often (0: never)")
	dir := flag.String("dir", "", "SQLite: keep the node's data directory here (default: a temporary one, removed), to inspect the database after the run")
	track := flag.Bool("track", true, "track opens and clicks, as #47's target is stated (-track=false: as the figures before this flag were measured)")
	footerRounds := flag.Int("footer-cost", 0, "instead: this many rounds of two broadcasts to the n members, personal links and footer on and off in turn, and their CPU per recipient compared")
	flag.Parse()
	ctx := context.Background()
	defer benchload.StartCPUProfile(*profile)()
	if *memProfile != "" {
		defer func() {
			if f, err := os.Create(*memProfile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	s, err := benchsink.Start()
	if err != nil {
		return err
	}
	defer s.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	env := map[string]string{"MAILROOM_OUTBOUND": "smtp://" + s.Addr, "MAILROOM_LIBCRYPTO": *libc}
	if *conc > 0 {
		env["MAILROOM_DELIVERY_CONCURRENCY"] = strconv.Itoa(*conc)
	}
	node, err := benchnode.Start(ctx, benchnode.Options{PG: *pg, Dir: *dir, Env: env, LogLevel: benchnode.Errors})
	if err != nil {
		return err
	}
	defer node.Stop()
	a, ws, call := node.App, node.Workspace, node.Call
	a.Delivery().SetKeys(benchkeys.Keys{Key: key})
	aud, err := call("POST", "/v1/audiences", map[string]any{"name": "Everyone"})
	if err != nil {
		return err
	}
	audID := aud["id"].(string)
	t0 := time.Now()
	for start := 0; start < *n; start += 500 {
		err := a.DB.InTx(ctx, func(tx *store.Tx) error {
			var cs, ms []string
			var ca, ma []any
			now := time.Now().UnixMilli()
			for i := start; i < min(*n, start+500); i++ {
				id := fmt.Sprintf("ct_bench%08d", i)
				attrs, _ := json.Marshal(map[string]string{"first_name": fmt.Sprint("Name", i), "plan": []string{"free", "pro"}[i%2], "city": fmt.Sprint("City", i%97)})
				cs = append(cs, "(?, ?, ?, ?, ?, ?)")
				ca = append(ca, id, ws.ID, fmt.Sprintf("m%07d@example.net", i), string(attrs), now, now)
				ms = append(ms, "(?, ?, ?, ?, 'subscribed', ?, ?)")
				ma = append(ma, "mem_"+id, ws.ID, audID, id, now, now)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO contacts (id, workspace_id, email, attributes, created_at, updated_at) VALUES `+strings.Join(cs, ","), ca...); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO memberships (id, workspace_id, audience_id, contact_id, status, created_at, updated_at) VALUES `+strings.Join(ms, ","), ma...)
			return err
		})
		if err != nil {
			return err
		}
	}
	fmt.Printf("loaded %d members in %v\n", *n, time.Since(t0).Round(time.Millisecond))
	html := "<html><body><p>Hello {{ first_name }}, news for {{ city }} ({{ plan }} plan).</p>" +
		strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n", 180) + "</body></html>"
	bc, err := call("POST", "/v1/broadcasts", map[string]any{"from": "News <onboarding@mailroom.localhost>", "audience_id": audID,
		"subject": "News for {{ first_name }}", "html": html, "track_opens": *track, "track_clicks": *track})
	if err != nil {
		return err
	}
	if bc["ready"] != true {
		return fmt.Errorf("broadcast not ready: %v", bc["problems"])
	}
	fmt.Printf("html body %d bytes; peak RSS so far (loading the members) %d MB\n", len(html), procStatus()["VmHWM"]/1024)
	if *footerRounds > 0 {
		return footerCost(node, s, audID, html, *n, *footerRounds)
	}
	cost, closeCost, err := costProbe(a.DB, *pg, filepath.Join(node.Dir, "mailroom.db"))
	if err != nil {
		return err
	}
	defer closeCost()
	before, err := cost.Baseline(ctx)
	if err != nil {
		return err
	}
	start, cpu0, os0, al0 := time.Now(), benchload.ProcessCPU(), readOSCounts(), readAllocs()
	var pk peak
	if _, err := call("POST", "/v1/broadcasts/"+bc["id"].(string)+"/send", map[string]any{}); err != nil {
		return err
	}
	fmt.Printf("send answered in %v; peak RSS so far %d MB\n", time.Since(start).Round(time.Millisecond), procStatus()["VmHWM"]/1024)
	// Transactional sends every 100 ms while the broadcast runs.
	probe := s.Probe(func(subject string) error {
		_, err := call("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.localhost", "to": benchnode.Owner, "subject": subject, "text": "your code"})
		return err
	})
	progress := *progressEvery
	lastAt, lastN, lastCPU := start, int64(0), cpu0
	for s.Others.Load() < int64(*n) {
		if progress > 0 && time.Since(lastAt) >= progress {
			now, got, c := time.Now(), s.Others.Load(), benchload.ProcessCPU()
			st := procStatus()
			fmt.Fprintf(os.Stderr, "%6.1fs %7d at the sink, %4.0f/s, CPU %3.0f%%, RSS %d MB anonymous + %d MB mapped files\n", now.Sub(start).Seconds(), got,
				float64(got-lastN)/now.Sub(lastAt).Seconds(), 100*float64(c-lastCPU)/float64(now.Sub(lastAt)), st["RssAnon"]/1024, st["RssFile"]/1024)
			lastAt, lastN, lastCPU = now, got, c
		}
		pk.sample()
		if time.Since(start) > 30*time.Minute {
			return fmt.Errorf("only %d of %d after 30 minutes", s.Others.Load(), *n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed, cpu, osc, al := time.Since(start), benchload.ProcessCPU()-cpu0, readOSCounts().minus(os0), readAllocs().minus(al0)
	hwm := procStatus()["VmHWM"]
	sent, p99, err := probe.Stop()
	if err != nil {
		return err
	}
	rate := float64(*n) / elapsed.Seconds()
	// The database's cost: rows and bytes once the last outcomes are
	// committed, bytes again once the WAL is emptied (SQLite) or the dead
	// tuples of the status updates vacuumed (PostgreSQL).
	after, err := cost.Settle(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	compacted, err := cost.Compact(ctx)
	if err != nil {
		return err
	}
	dbcost.Report(os.Stdout, "recipient", *n, before, after, compacted)
	fmt.Printf("(the counts include the %d transactional probe sends: %.1f%% as many as the recipients)\n", sent, 100*float64(sent)/float64(*n))
	// On a loaded machine the rate mostly measures the wait for a core; the
	// CPU spent per recipient (the node, the sink and the transactional
	// sends, all in this process) says what a quiet machine could do.
	fmt.Printf("CPU %v: %.2f ms per recipient\n", cpu.Round(time.Millisecond), float64(cpu.Microseconds())/1000/float64(*n))
	st := procStatus()
	fmt.Printf("peak RSS %d MB (ceiling 300 MB; %d MB when the last recipient arrived); at the end %d MB anonymous, %d MB of mapped files (SQLite's readers map the database)\n",
		st["VmHWM"]/1024, hwm/1024, st["RssAnon"]/1024, st["RssFile"]/1024)
	pk.report(os.Stdout)
	fmt.Printf("allocated per recipient: %.1f KB in %.0f objects, %.3f GC cycles (load-independent; the sink's and the probe sends' included)\n",
		float64(al.bytes)/1024/float64(*n), float64(al.objects)/float64(*n), float64(al.cycles)/float64(*n))
	fmt.Printf("per recipient: %.1f minor page faults, %.1f read syscalls (%.1f KB read), %.1f write syscalls (load-independent counts)\n",
		float64(osc.minflt)/float64(*n), float64(osc.syscr)/float64(*n), float64(osc.rchar)/1024/float64(*n), float64(osc.syscw)/float64(*n))
	fmt.Printf("transactional sends during the broadcast: %d, p99 accept-to-sink %v (ceiling 2s)\n", sent, p99.Round(time.Millisecond))
	fmt.Printf("broadcast of %d: %d recipients at the sink in %v: %.0f recipients/s (target 2000/s)\n", *n, *n, elapsed.Round(time.Millisecond), rate)
	return nil
}

// footerCost sends rounds pairs of broadcasts to the n members, one with
// personal links (body links, footer, one-click headers) and one without,
// in alternating order, and compares the process CPU per recipient: the
// issue's ceiling is 5% more with them.
func footerCost(node *benchnode.Node, s *benchsink.Sink, audID, html string, n, rounds int) error {
	// Arms: 0 no personal links, 1 links in the one-click headers alone
	// (every marketing mail had them before a body could show its links),
	// 2 links in the headers and the body with the footer; in turn, the
	// order rotating each round.
	names := [3]string{"off", "headers", "on"}
	var cpu [3]time.Duration
	var alloc [3]allocs              // what each arm allocated: a count the machine's load does not change
	var ratios, bodyRatios []float64 // each round's on / off and on / headers
	for r := range rounds {
		var round [3]time.Duration
		for k := range 3 {
			arm := (r + k) % 3
			node.App.Broadcasts().SetLinks([3]broadcasts.LinkMode{broadcasts.LinksNone, broadcasts.LinksHeadersOnly, broadcasts.LinksEverywhere}[arm])
			bc, err := node.Call("POST", "/v1/broadcasts", map[string]any{"from": "News <onboarding@mailroom.localhost>", "audience_id": audID,
				"subject": "News for {{ first_name }}", "html": html})
			if err != nil {
				return err
			}
			target, c0, a0 := s.Others.Load()+int64(n), benchload.ProcessCPU(), readAllocs()
			if _, err := node.Call("POST", "/v1/broadcasts/"+bc["id"].(string)+"/send", map[string]any{}); err != nil {
				return err
			}
			for s.Others.Load() < target {
				time.Sleep(10 * time.Millisecond)
			}
			settle() // the round's tail (statuses, events) is its own, not the next one's
			d, a := benchload.ProcessCPU()-c0, readAllocs().minus(a0)
			cpu[arm] += d
			round[arm] = d
			alloc[arm] = alloc[arm].plus(a)
			fmt.Printf("round %d, personal links %-7s: %.3f ms CPU per recipient\n", r+1, names[arm], float64(d.Microseconds())/1000/float64(n))
		}
		ratios = append(ratios, float64(round[2])/float64(round[0]))
		bodyRatios = append(bodyRatios, float64(round[2])/float64(round[1]))
	}
	node.App.Broadcasts().SetLinks(broadcasts.LinksEverywhere)
	slices.Sort(ratios)
	slices.Sort(bodyRatios)
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n*rounds) }
	fmt.Printf("CPU per recipient: off %.3f ms, headers only %.3f ms, on %.3f ms\n", per(cpu[0]), per(cpu[1]), per(cpu[2]))
	pa := func(a allocs) string {
		k := float64(n * rounds)
		return fmt.Sprintf("%.1f KB in %.0f objects, %.3f GC cycles", float64(a.bytes)/1024/k, float64(a.objects)/k, float64(a.cycles)/k)
	}
	fmt.Printf("allocated per recipient: off %s; headers only %s; on %s\n", pa(alloc[0]), pa(alloc[1]), pa(alloc[2]))
	fmt.Printf("body links and footer against the one-click headers alone: %+.1f%% CPU per recipient (median of the rounds' ratios %+.1f%%)\n",
		100*(per(cpu[2])/per(cpu[1])-1), 100*(bodyRatios[len(bodyRatios)/2]-1))
	fmt.Printf("footer and personal links: %+.1f%% CPU per recipient (%d rounds of %d, interleaved; ceiling +5%%; median of the rounds' ratios %+.1f%%)\n",
		100*(per(cpu[2])/per(cpu[0])-1), rounds, n, 100*(ratios[len(ratios)/2]-1))
	return nil
}

// allocs are the heap's cumulative allocations and collections.
type allocs struct{ bytes, objects, cycles uint64 }

func readAllocs() allocs {
	m := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(m)
	return allocs{m[0].Value.Uint64(), m[1].Value.Uint64(), m[2].Value.Uint64()}
}

func (a allocs) minus(b allocs) allocs {
	return allocs{a.bytes - b.bytes, a.objects - b.objects, a.cycles - b.cycles}
}
func (a allocs) plus(b allocs) allocs {
	return allocs{a.bytes + b.bytes, a.objects + b.objects, a.cycles + b.cycles}
}

// settle waits until the process is idle (under 5 ms CPU in 100 ms) and
// collects garbage, so each round of footerCost pays only for its own work.
func settle() {
	for {
		c := benchload.ProcessCPU()
		time.Sleep(100 * time.Millisecond)
		if benchload.ProcessCPU()-c < 5*time.Millisecond {
			runtime.GC()
			return
		}
	}
}

// costProbe is the database cost probe. On SQLite it reads through its own
// connection, which does not map the file: its count(*) and dbstat read
// every page, and through the node's readers, which map the file, the whole
// database would become resident in the node's address space, a peak of
// the measurement's own making, not the broadcast's.
func costProbe(db *store.DB, pg, file string) (*dbcost.Probe, func(), error) {
	if pg != "" {
		return dbcost.New(db, ""), func() {}, nil
	}
	r, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, nil, err
	}
	r.SetMaxOpenConns(1)
	return dbcost.New(&store.DB{W: db.W, R: r, Dialect: db.Dialect}, file), func() { r.Close() }, nil
}

// osCounts are the process's load-independent kernel counters: minor page
// faults (getrusage) and read and write syscalls (/proc/self/io).
type osCounts struct{ minflt, syscr, syscw, rchar int64 }

func readOSCounts() osCounts {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	c := osCounts{minflt: ru.Minflt}
	b, _ := os.ReadFile("/proc/self/io")
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			c.syscr = n
		case "syscw":
			c.syscw = n
		case "rchar":
			c.rchar = n
		}
	}
	return c
}

func (a osCounts) minus(b osCounts) osCounts {
	return osCounts{a.minflt - b.minflt, a.syscr - b.syscr, a.syscw - b.syscw, a.rchar - b.rchar}
}

// peak is the resident set at its largest sample during the broadcast,
// split into anonymous memory (of which the Go runtime's share) and mapped
// files, and the database's mappings then (one per connection that maps).
type peak struct {
	anon, file, goTotal, goHeap int
	dbMaps                      []int // resident kB of each mapping of the database file
	last                        time.Time
}

func (p *peak) sample() {
	st := procStatus()
	if st["RssAnon"]+st["RssFile"] <= p.anon+p.file || time.Since(p.last) < 500*time.Millisecond {
		return
	}
	p.last = time.Now()
	m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(m)
	p.anon, p.file = st["RssAnon"], st["RssFile"]
	p.goTotal, p.goHeap = int((m[0].Value.Uint64()-m[1].Value.Uint64())/1024), int(m[2].Value.Uint64()/1024) // released pages are not resident
	p.dbMaps = p.dbMaps[:0]
	b, _ := os.ReadFile("/proc/self/smaps")
	db := false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-"):
			db = strings.HasSuffix(f[5], "mailroom.db")
		case db && len(f) >= 2 && f[0] == "Rss:":
			v, _ := strconv.Atoi(f[1])
			p.dbMaps = append(p.dbMaps, v)
		}
	}
}

func (p *peak) report(w io.Writer) {
	var maps []int
	for _, v := range p.dbMaps {
		if v >= 1024 {
			maps = append(maps, v/1024)
		}
	}
	fmt.Fprintf(w, "at the largest sample: %d MB anonymous (Go runtime %d MB, of it live heap %d MB; the rest SQLite's and libcrypto's), %d MB mapped files (the database in %d mapped regions, MB each where 1 MB or more: %v)\n",
		p.anon/1024, p.goTotal/1024, p.goHeap/1024, p.file/1024, len(p.dbMaps), maps)
}

// procStatus is /proc/self/status's sizes in kB, by field name.
func procStatus() map[string]int {
	b, _ := os.ReadFile("/proc/self/status")
	m := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			if v, err := strconv.Atoi(f[1]); err == nil {
				m[strings.TrimSuffix(f[0], ":")] = v
			}
		}
	}
	return m
}
