// Command send measures how many sends a Mailroom node accepts per second:
// POST /v1/emails to delivered@ over loopback at 64 connections, beside the
// bare net/http JSON ceiling measured in the same run on the same machine.
//
//	go run ./bench/send                     # SQLite
//	go run ./bench/send -pg postgres://...  # SQLite, then PostgreSQL
//	go run ./bench/send -real               # real recipients, see -real
//
// The node is the real one (internal/app) with durable settings (on SQLite
// the WAL is flushed to disk before an answer, see store.walSync): every 200
// counted here is an email committed to disk with its timeline event and its
// job.
//
// The ceiling and the node are measured in alternating one-second slices
// (ceiling, node, node, ceiling, ...), and each figure sums its slices. This
// machine's speed drifts by a fifth or more within a minute; measured one
// after the other, the two figures of a ratio saw different machines.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mailroom/bench/internal/benchnode"
	"mailroom/bench/internal/dbcost"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"mailroom/internal/ids"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/send:", err)
		os.Exit(1)
	}
}

type options struct {
	duration      time.Duration
	slice         time.Duration
	conns         int
	pg            string
	skipLite      bool
	cpuProfile    string
	real          bool
	policy        bool   // -policy: measure each database with the sending policy off and on
	policyOn      bool   // this measurement's node runs every policy (set per measurement)
	policyOnFirst bool   // -policy-on-first: the order on, off, off, on
	requestLog    string // -request-log: on (the node's default) or both
}

// to is the recipient of the measured sends.
func (o options) to() string {
	if o.real {
		return "owner@bench.test"
	}
	return "delivered@bench.test"
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	var o options
	fs.DurationVar(&o.duration, "d", 10*time.Second, "duration of each measurement (the node's sends, and the ceiling beside them)")
	fs.DurationVar(&o.slice, "slice", time.Second, "length of one slice of the alternating ceiling and node measurements")
	fs.IntVar(&o.conns, "c", 64, "concurrent connections")
	fs.StringVar(&o.pg, "pg", "", "PostgreSQL URL to measure as well (a scratch schema is created and dropped)")
	fs.BoolVar(&o.skipLite, "no-sqlite", false, "skip the SQLite measurement")
	fs.BoolVar(&o.real, "real", false, "send to a real recipient (the workspace owner, whom the sandbox sender may reach) instead of delivered@: each email gets its delivery job in the accepting commit, as a user's sends do; the relay is a closed loopback port and one delivery worker runs, so deliveries fail and wait for their retry, off the measurement")
	fs.BoolVar(&o.policy, "policy", false, "measure each database four times, the sending policy off, on, on, off (a fresh database each): every policy on with quotas too high to fire (internal/policy), against every rule off; use with -real, since test addresses skip the counters")
	fs.BoolVar(&o.policyOnFirst, "policy-on-first", false, "with -policy, measure in the order on, off, off, on (a position in the order has its own cost: the second measurement ran heaviest)")
	fs.StringVar(&o.requestLog, "request-log", "on", "on: the nodes keep the request log (the default); both: instead of the usual measurements, two nodes per database, the log on and off, loaded in alternating slices for -d each, then the storage per logged request and the on/off ratio")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "after the measurements, load each node alone for -d more and write a CPU profile of that to this file (one file per database, the name suffixed with it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.slice <= 0 || o.slice > o.duration {
		o.slice = o.duration
	}
	if o.requestLog != "on" && o.requestLog != "both" {
		return fmt.Errorf("-request-log is on or both, not %q", o.requestLog)
	}
	if o.requestLog == "both" {
		return runRequestLog(ctx, o, out)
	}

	ceiling, stop, err := startCeiling()
	if err != nil {
		return err
	}
	defer stop()

	var headline []string
	ratios := map[string][]float64{} // label -> ratio to ceiling of each measurement
	measure := func(name, label, dbURL string, policyOn bool) error {
		o := o
		o.policyOn = policyOn
		m, err := measureNode(ctx, o, ceiling, dbURL, name)
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		c, r, noWrite := m.ceiling, m.sends, m.refused
		ratio := r.rate() / c.rate()
		ratios[label] = append(ratios[label], ratio)
		fmt.Fprintf(out, "%-10s bare net/http JSON ceiling: %8.0f req/s  p50 %v  p99 %v  CPU %v per request\n",
			label, c.rate(), c.p(50), c.p(99), c.perRequest())
		fmt.Fprintf(out, "%-10s POST /v1/emails to %s: %8.0f sends/s  p50 %v  p99 %v  errors %d  CPU %v per send%s  ratio to ceiling %.2f%s\n",
			label, o.to(), r.rate(), r.p(50), r.p(99), r.errors, r.perRequest(), r.serverShare(name), ratio, spread(m.ratios))
		fmt.Fprintf(out, "%-10s group commit: %s\n", label, m.commits.line(r.elapsed))
		for _, l := range strings.Split(strings.TrimSpace(m.cost), "\n") {
			fmt.Fprintf(out, "%-10s %s\n", label, l)
		}
		fmt.Fprintf(out, "%-10s same node, refused after auth, decode and validation (no write): %8.0f req/s  CPU %v per request  ratio to ceiling %.2f\n",
			label, noWrite.rate(), noWrite.perRequest(), noWrite.rate()/c.rate())
		if !o.policy {
			headline = append(headline, fmt.Sprintf("%s %.0f sends/s p99 %v (%.2f of %.0f ceiling)", name, r.rate(), r.p(99), ratio, c.rate()))
		}
		return nil
	}
	// each measures one database, or with -policy four times (policy off,
	// on, on, off: each side sees the early and the late machine alike), a
	// fresh database each time, and sums up the policy's cost.
	each := func(name string, fresh func() (string, func(), error)) error {
		runs := []bool{false}
		if o.policy {
			runs = []bool{false, true, true, false}
			if o.policyOnFirst {
				runs = []bool{true, false, false, true}
			}
		}
		for _, on := range runs {
			u, drop, err := fresh()
			if err != nil {
				return err
			}
			label := name
			if o.policy {
				label = name + map[bool]string{false: " off", true: " on"}[on]
			}
			err = measure(name, label, u, on)
			drop()
			if err != nil {
				return err
			}
		}
		if o.policy {
			off, on := mean(ratios[name+" off"]), mean(ratios[name+" on"])
			headline = append(headline, fmt.Sprintf("%s policy on/off %.3f (ratio to ceiling %.3f on, %.3f off; ceiling 0.95)", name, on/off, on, off))
		}
		return nil
	}
	if !o.skipLite {
		dir, err := os.MkdirTemp("", "mailroom-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		n := 0
		if err := each("sqlite", func() (string, func(), error) {
			n++
			return filepath.Join(dir, fmt.Sprintf("mailroom%d.db", n)), func() {}, nil
		}); err != nil {
			return err
		}
	}
	if o.pg != "" {
		if err := each("postgres", func() (string, func(), error) { return scratchSchema(ctx, o.pg) }); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, strings.Join(headline, "; "))
	return nil
}

// result is one measurement.
type result struct {
	ok        int64
	errors    int64
	elapsed   time.Duration
	latencies []time.Duration
	cpu       time.Duration // this process's CPU time (node and load generator) during the run
	dbCPU     time.Duration // the local PostgreSQL server's CPU time during the run (0 when unknown)
}

// perRequest is the process CPU time per answered request: steadier than the
// rate on a shared machine, so it is what to compare between two builds.
func (r *result) perRequest() time.Duration {
	return (r.cpu / time.Duration(max(r.ok+r.errors, 1))).Round(100 * time.Nanosecond)
}

// processCPU is the user plus system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverShare is the local PostgreSQL server's CPU per send, for the
// PostgreSQL node ("" elsewhere or when it is not on this machine).
func (r *result) serverShare(name string) string {
	if name != "postgres" || r.dbCPU <= 0 {
		return ""
	}
	return fmt.Sprintf(" + PostgreSQL %v", (r.dbCPU / time.Duration(max(r.ok+r.errors, 1))).Round(100*time.Nanosecond))
}

// postgresCPU is the user plus system time of every process named postgres
// on this machine (a local server's backends and helpers), read from /proc;
// 0 where there is none. A send's cost on PostgreSQL is the node's CPU and
// the server's: both run on the same two cores.
func postgresCPU() time.Duration {
	dirs, _ := os.ReadDir("/proc")
	var ticks int64
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 14 and 15, counted
		// after the comm, which may hold spaces.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || string(b[open+1:end]) != "postgres" {
			continue
		}
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 13 {
			continue
		}
		var ut, st int64
		fmt.Sscan(f[11], &ut)
		fmt.Sscan(f[12], &st)
		ticks += ut + st
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

func (r *result) rate() float64 { return float64(r.ok) / r.elapsed.Seconds() }

// add sums slice x into r; latencies are sorted again by the caller.
func (r *result) add(x *result) {
	r.ok += x.ok
	r.errors += x.errors
	r.elapsed += x.elapsed
	r.cpu += x.cpu
	r.dbCPU += x.dbCPU
	r.latencies = append(r.latencies, x.latencies...)
}

func (r *result) p(q int) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := len(r.latencies) * q / 100
	if i >= len(r.latencies) {
		i = len(r.latencies) - 1
	}
	return r.latencies[i].Round(10 * time.Microsecond)
}

// load fires POSTs from conns goroutines for d and counts answers with want.
func load(ctx context.Context, target, key string, body []byte, want, conns int, d time.Duration) (*result, error) {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var ok, bad atomic.Int64
	var firstErr atomic.Value
	lat := make([][]time.Duration, conns)
	start := time.Now()
	cpu0, db0 := processCPU(), postgresCPU()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1<<14)
			for time.Now().Before(deadline) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					bad.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				local = append(local, time.Since(t0))
				if resp.StatusCode == want {
					ok.Add(1)
				} else {
					bad.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, b))
				}
			}
			lat[i] = local
		}()
	}
	wg.Wait()
	r := &result{ok: ok.Load(), errors: bad.Load(), elapsed: time.Since(start), cpu: processCPU() - cpu0, dbCPU: postgresCPU() - db0}
	for _, l := range lat {
		r.latencies = append(r.latencies, l...)
	}
	slices.Sort(r.latencies)
	if r.ok == 0 {
		return r, fmt.Errorf("no request succeeded: %v", firstErr.Load())
	}
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "first error: %v\n", e)
	}
	return r, nil
}

// startCeiling runs a bare net/http server that decodes a JSON body and
// answers a small JSON object (what any Go JSON API costs on this machine)
// and returns its URL.
func startCeiling() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := json.Marshal(map[string]string{"id": ids.New("em"), "status": "queued"})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/v1/emails", func() { srv.Close() }, nil
}

// settle is the pause before each slice.
const settle = 200 * time.Millisecond

// interleave measures the ceiling and the node's sends for o.duration each,
// in alternating slices: ceiling first in odd rounds, node first in even
// ones, so that a drift of the machine's speed weighs on both alike.
//
// It also returns the ratio of each round (the node's slice over the
// ceiling's beside it), whose spread says how far one run's ratio can be
// trusted on this machine.
func interleave(ctx context.Context, o options, ceiling, target, key string) (c, n *result, ratios []float64, err error) {
	c, n = &result{}, &result{}
	var cRate, nRate float64 // this round's
	measure := []func() error{
		func() error {
			r, err := load(ctx, ceiling, "", sendBody(o.to()), http.StatusOK, o.conns, o.slice)
			if err == nil {
				c.add(r)
				cRate = r.rate()
			}
			return err
		},
		func() error {
			r, err := load(ctx, target, key, sendBody(o.to()), http.StatusOK, o.conns, o.slice)
			if err == nil {
				n.add(r)
				nRate = r.rate()
			}
			return err
		},
	}
	rounds := max(1, int(o.duration/o.slice))
	for i := range rounds {
		first := i % 2
		for _, m := range []func() error{measure[first], measure[1-first]} {
			// A pause lets the work a slice left behind (a checkpoint,
			// a collection) end before the next slice starts.
			time.Sleep(settle)
			if err := m(); err != nil {
				return nil, nil, nil, err
			}
		}
		ratios = append(ratios, nRate/cRate)
	}
	slices.Sort(c.latencies)
	slices.Sort(n.latencies)
	return c, n, ratios, nil
}

// spread describes per-round ratios: their median and range.
func spread(ratios []float64) string {
	if len(ratios) < 2 {
		return ""
	}
	ratios = slices.Sorted(slices.Values(ratios))
	mid := ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		mid = (ratios[len(ratios)/2-1] + mid) / 2
	}
	return fmt.Sprintf(" (%d rounds: median %.2f, %.2f to %.2f)", len(ratios), mid, ratios[0], ratios[len(ratios)-1])
}

func sendBody(to string) []byte {
	b, _ := json.Marshal(map[string]any{
		"from": "Bench <onboarding@bench.test>", "to": []string{to},
		"subject": "Your receipt", "text": "Thanks for your order.", "html": "<p>Thanks for your order.</p>",
		"tags": map[string]string{"kind": "receipt"},
	})
	return b
}

// nodeResult is one node's measurements.
type nodeResult struct {
	ceiling, sends, refused *result
	ratios                  []float64    // per round of the interleaved measurement, in round order
	commits                 groupCommits // during the sends (and the ceiling's slices, when it commits nothing)
	cost                    string       // what the sends cost the database per accepted email (dbcost.Report)
}

// groupCommits is the node's group-commit metrics (see sending's
// commitMetrics): commits, the writes and seconds they sum to, and the
// flushes that followed them.
type groupCommits struct {
	commits, flushes           uint64
	writes, seconds, flushSecs float64
}

func (g groupCommits) since(o groupCommits) groupCommits {
	return groupCommits{g.commits - o.commits, g.flushes - o.flushes, g.writes - o.writes, g.seconds - o.seconds, g.flushSecs - o.flushSecs}
}

// line describes the commits of sends that took elapsed: how many writes
// share one, how long one takes and how many were in flight on average
// (PostgreSQL's committer keeps up to two), and how long the answers then
// waited for the disk.
func (g groupCommits) line(elapsed time.Duration) string {
	if g.commits == 0 {
		return "no group commits"
	}
	n := float64(g.commits)
	s := fmt.Sprintf("%.1f writes per commit, %.2fms per commit (%.2f in flight)",
		g.writes/n, g.seconds/n*1e3, g.seconds/elapsed.Seconds())
	if g.flushes > 0 {
		s += fmt.Sprintf(", then %.2fms to reach the disk", g.flushSecs/float64(g.flushes)*1e3)
	}
	return s
}

// commitStats reads the send committer's group-commit histograms from reg.
func commitStats(reg *prometheus.Registry) groupCommits {
	var g groupCommits
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		i := slices.IndexFunc(mf.GetMetric(), func(m *dto.Metric) bool {
			return slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == "committer" && l.GetValue() == "send"
			})
		})
		if i < 0 {
			continue
		}
		h := mf.GetMetric()[i].GetHistogram()
		switch mf.GetName() {
		case "mailroom_group_commit_writes":
			g.commits, g.writes = h.GetSampleCount(), h.GetSampleSum()
		case "mailroom_group_commit_seconds":
			g.seconds = h.GetSampleSum()
		case "mailroom_group_commit_flush_seconds":
			g.flushes, g.flushSecs = h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return g
}

// realEnv points a -real node's deliveries at a closed loopback port with
// one worker: they fail and wait for their retry, off the measurement (a
// real MX lookup of bench.test would bounce the owner and suppress it).
func (o options) realEnv(env map[string]string) error {
	if !o.real {
		return nil
	}
	relay, err := closedPort()
	if err != nil {
		return err
	}
	env["MAILROOM_OUTBOUND"] = "smtp://" + relay
	env["MAILROOM_DELIVERY_CONCURRENCY"] = "1"
	return nil
}

// measureNode starts a real node on dbURL and loads POST /v1/emails,
// interleaved with the ceiling; then, for scale, the same requests with a
// send_at too far out, which the node refuses (400) after authenticating,
// decoding and validating them: what the node costs without the write.
func measureNode(ctx context.Context, o options, ceiling, dbURL, name string) (*nodeResult, error) {
	env := map[string]string{"MAILROOM_DATABASE_URL": dbURL, "MAILROOM_SERVICE_DOMAIN": "bench.test"}
	if o.policy {
		for k, v := range policyEnv(o.policyOn) {
			env[k] = v
		}
	}
	if err := o.realEnv(env); err != nil {
		return nil, err
	}
	node, err := benchnode.Start(ctx, benchnode.Options{Dir: os.TempDir(), Env: env, LogLevel: benchnode.Errors})
	if err != nil {
		return nil, err
	}
	defer node.Stop()
	a, key := node.App, node.Key
	target := "http://" + a.HTTPAddr() + "/v1/emails"
	// A short warm-up fills connection pools and statement caches.
	if _, err := load(ctx, target, key, sendBody(o.to()), http.StatusOK, o.conns, time.Second); err != nil {
		return nil, err
	}
	m := &nodeResult{}
	cost := dbcost.New(a.DB, dbURL)
	baseline, err := cost.Baseline(ctx)
	if err != nil {
		return nil, err
	}
	before := commitStats(a.Registry)
	if m.ceiling, m.sends, m.ratios, err = interleave(ctx, o, ceiling, target, key); err != nil {
		return nil, err
	}
	m.commits = commitStats(a.Registry).since(before)
	after, err := cost.Settle(ctx, 30*time.Second)
	if err != nil {
		return nil, err
	}
	compacted, err := cost.Compact(ctx)
	if err != nil {
		return nil, err
	}
	var report bytes.Buffer
	dbcost.Report(&report, "accepted email", int(m.sends.ok), baseline, after, compacted)
	m.cost = report.String()
	var far map[string]any
	json.Unmarshal(sendBody(o.to()), &far)
	far["send_at"] = "in 99 days"
	farBody, _ := json.Marshal(far)
	if m.refused, err = load(ctx, target, key, farBody, http.StatusBadRequest, o.conns, o.duration/2); err != nil {
		return nil, err
	}
	if o.cpuProfile != "" {
		if err := profileSends(ctx, o, o.cpuProfile+"."+name, target, key); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// profileSends loads the node alone for o.duration under the CPU profiler.
func profileSends(ctx context.Context, o options, file, target, key string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	_, err = load(ctx, target, key, sendBody(o.to()), http.StatusOK, o.conns, o.duration)
	return err
}

// scratchSchema creates a schema for the run and returns a URL selecting it.
func scratchSchema(ctx context.Context, base string) (string, func(), error) {
	db, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	schema := "bench_" + strings.ToLower(strings.TrimPrefix(ids.New("b"), "b_"))
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("creating scratch schema: %w", err)
	}
	drop := func() {
		db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		db.Close()
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, errors.New("-pg is not a URL")
	}
	q := u.Query()
	q.Set("search_path", schema+",public") // public: where pg_trgm may already live
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// closedPort answers a loopback address nothing listens on: a port the
// kernel handed out and that was closed again.
func closedPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// policyEnv is the sending policy of a -policy measurement: every rule on
// with limits too high to fire, or every rule off (the pause rates are on
// by default, so off sets them to 0).
func policyEnv(on bool) map[string]string {
	if !on {
		return map[string]string{"MAILROOM_PAUSE_BOUNCE_RATE": "0", "MAILROOM_PAUSE_COMPLAINT_RATE": "0"}
	}
	return map[string]string{
		"MAILROOM_DAILY_QUOTA": "1000000000", "MAILROOM_MONTHLY_QUOTA": "1000000000", "MAILROOM_ADDRESS_DAILY_CAP": "1000000000",
		"MAILROOM_DUPLICATE_BURST": "1000000000", "MAILROOM_VELOCITY_FACTOR": "1000", "MAILROOM_COLD_START": "1000000000",
		"MAILROOM_PAUSE_BOUNCE_RATE": "0.08", "MAILROOM_PAUSE_COMPLAINT_RATE": "0.003",
	}
}

func mean(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t / float64(max(len(xs), 1))
}
