// Command webhooks measures webhook fan-out on one in-process node on
// SQLite: N events are raised quickly (events.Raise in batched
// transactions, as the sending side does) for a workspace with one endpoint,
// a local receiver on 127.0.0.1 verifies every signature with its own HMAC
// code, and the run reports deliveries per second and the p99 time from
// raise to receipt. The last line is the headline.
//
//	go run ./bench/webhooks [-events 20000] [-batch 500] [-concurrency 64] [-rate 0]
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mailroom/bench/internal/benchnode"
	"mailroom/bench/internal/dbcost"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mailroom/internal/events"
	"mailroom/internal/store"
	"mailroom/internal/webhooks"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/webhooks:", err)
		os.Exit(1)
	}
}

type receiver struct {
	secret   string
	mu       sync.Mutex
	received map[string]time.Time // event id -> first receipt
	dups     atomic.Int64
	badSig   atomic.Int64
	done     chan struct{}
	want     int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	now := time.Now()
	if !verify(r.Header.Get("X-Svc-Signature"), body, rc.secret) {
		rc.badSig.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var env struct {
		ID string `json:"id"`
	}
	json.Unmarshal(body, &env)
	rc.mu.Lock()
	if _, ok := rc.received[env.ID]; ok {
		rc.dups.Add(1)
	} else {
		rc.received[env.ID] = now
		if len(rc.received) == rc.want {
			close(rc.done)
		}
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// verify checks t=<unix>,v1=<hex> independently of the webhooks package.
func verify(header string, body []byte, secret string) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	want := hex.EncodeToString(m.Sum(nil))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

func run() error {
	n := flag.Int("events", 20000, "events to raise")
	batch := flag.Int("batch", 500, "events per raising transaction")
	concurrency := flag.Int("concurrency", 64, "MAILROOM_WEBHOOK_CONCURRENCY")
	rate := flag.Int("rate", 0, "raise this many events per second (0: as fast as possible), to see latency below saturation")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}

	ctx := context.Background()
	warn := slog.LevelWarn
	node, err := benchnode.Start(ctx, benchnode.Options{LogLevel: &warn, Env: map[string]string{
		"MAILROOM_WEBHOOK_ALLOW_PRIVATE": "true", "MAILROOM_WEBHOOK_CONCURRENCY": strconv.Itoa(*concurrency),
	}})
	if err != nil {
		return err
	}
	defer node.Stop()
	a, ws := node.App, node.Workspace

	rc := &receiver{received: make(map[string]time.Time, *n), done: make(chan struct{}), want: *n}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rc}
	go srv.Serve(ln)
	defer srv.Close()
	ep, err := a.Webhooks().Create(ctx, ws.ID, webhooks.CreateParams{URL: "http://" + ln.Addr().String() + "/hooks", Events: []string{"email.delivered"}})
	if err != nil {
		return err
	}
	rc.secret = ep.Secret

	cost := dbcost.New(a.DB, filepath.Join(node.Dir, "mailroom.db"))
	before, err := cost.Baseline(ctx)
	if err != nil {
		return err
	}
	raised := make(map[string]time.Time, *n)
	start := time.Now()
	var tick *time.Ticker
	if *rate > 0 {
		*batch = max(1, *rate/20)
		tick = time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	}
	for done := 0; done < *n; {
		if tick != nil {
			<-tick.C
		}
		k := min(*batch, *n-done)
		var ids []string
		err := a.DB.InTx(ctx, func(tx *store.Tx) error {
			ids = ids[:0]
			for i := range k {
				em := fmt.Sprintf("em_%d", done+i)
				ev, err := events.Raise(ctx, tx, events.Event{
					WorkspaceID: ws.ID, EmailID: em, Type: events.EmailDelivered, CreatedAt: time.Now(),
					Data: map[string]any{"email_id": em, "from": "a@example.com", "to": []string{"b@example.com"}, "subject": "Hello", "tags": map[string]string{}},
				})
				if err != nil {
					return err
				}
				ids = append(ids, ev.ID)
			}
			return nil
		})
		if err != nil {
			return err
		}
		at := time.Now() // committed: the event exists from here on
		for _, id := range ids {
			raised[id] = at
		}
		done += k
	}
	raiseDur := time.Since(start)

	select {
	case <-rc.done:
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("timed out with %d of %d delivered", len(rc.received), *n)
	}
	total := time.Since(start)
	rc.mu.Lock()
	var last time.Time
	lat := make([]time.Duration, 0, *n)
	for id, got := range rc.received {
		lat = append(lat, got.Sub(raised[id]))
		if got.After(last) {
			last = got
		}
	}
	rc.mu.Unlock()
	slices.Sort(lat)
	p := func(q float64) time.Duration {
		return lat[min(len(lat)-1, int(float64(len(lat))*q))].Round(time.Millisecond)
	}
	perSec := float64(*n) / last.Sub(start).Seconds()
	fmt.Printf("events raised:        %d in %s (%.0f/s, %d per transaction)\n", *n, raiseDur.Round(time.Millisecond), float64(*n)/raiseDur.Seconds(), *batch)
	fmt.Printf("delivered:            %d distinct in %s; duplicates %d; bad signatures %d\n", len(lat), total.Round(time.Millisecond), rc.dups.Load(), rc.badSig.Load())
	fmt.Printf("raise -> receipt:     p50 %s  p90 %s  p99 %s  max %s\n", p(0.50), p(0.90), p(0.99), lat[len(lat)-1].Round(time.Millisecond))
	after, err := cost.Settle(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	compacted, err := cost.Compact(ctx)
	if err != nil {
		return err
	}
	dbcost.Report(os.Stdout, "webhook (its event raised and delivered)", *n, before, after, compacted)
	fmt.Printf("webhooks: %.0f deliveries/s on SQLite (1 endpoint, concurrency %d), p99 raise->receipt %s\n", perSec, *concurrency, p(0.99))
	return nil
}
