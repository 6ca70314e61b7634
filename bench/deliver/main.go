// Command deliver measures the delivery engine end to end: an in-process
// node on SQLite delivers N accepted emails, each signed with RSA-2048 DKIM,
// through the relay transport to a go-smtp sink on loopback. In the same run
// it measures the two ceilings that bound the figure: the raw SMTP loopback
// rate (the same client and sink, no Mailroom) and the RSA-2048 signing rate
// on every core. The last line is the headline.
//
//	go run ./bench/deliver [-n 5000] [-workers 128]
package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"mailroom/bench/internal/benchkeys"
	"mailroom/bench/internal/benchsink"
	benchload "mailroom/bench/internal/load"
	"mailroom/internal/app"
	"mailroom/internal/config"
	"mailroom/internal/ids"
	"mailroom/internal/jobs"
	"mailroom/internal/outbound"
	"mailroom/internal/store"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "deliver:", err)
		os.Exit(1)
	}
}

func run() error {
	n := flag.Int("n", 5000, "emails to deliver")
	workers := flag.Int("workers", 128, "deliver workers (MAILROOM_DELIVERY_CONCURRENCY)")
	window := flag.Duration("window", 3*time.Second, "how long each ceiling is measured")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the end-to-end phase to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the end-to-end phase to this file (every 4 KB sampled; the profile before it to FILE.base)")
	flag.Parse()
	if *memProfile != "" {
		runtime.MemProfileRate = 4 << 10
	}
	ctx := context.Background()

	sink, err := benchsink.Start()
	if err != nil {
		return err
	}
	defer sink.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	sample, err := sampleMessage()
	if err != nil {
		return err
	}
	fmt.Printf("cpus: %d, message: %d bytes, workers: %d\n", runtime.GOMAXPROCS(0), len(sample), *workers)

	cpu0, signed := benchload.ProcessCPU(), 0
	signRate, err := signCeiling(key, sample, *window, &signed)
	if err != nil {
		return err
	}
	signCPU := (benchload.ProcessCPU() - cpu0) / time.Duration(max(1, signed))
	fmt.Printf("RSA-2048 DKIM signing ceiling: %.0f signatures/s on %d cores, CPU %s per signature\n", signRate, runtime.GOMAXPROCS(0), signCPU.Round(time.Microsecond))

	smtpRate, err := smtpCeiling(ctx, sink, sample, *workers, *window)
	if err != nil {
		return err
	}
	fmt.Printf("raw SMTP loopback ceiling (same client and sink, no Mailroom): %.0f msgs/s\n", smtpRate)

	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rate, cpu, alloc, err := endToEnd(ctx, sink, key, *n, *workers, *memProfile)
	if err != nil {
		return err
	}
	// Allocations do not move with the machine's load as time does (the
	// sink's and River's polling within the window are counted too).
	fmt.Printf("allocated per email: %.0f objects, %.1f KB (the process: node and sink)\n",
		float64(alloc.Mallocs)/float64(*n), float64(alloc.TotalAlloc)/float64(*n)/1024)
	// The CPU ratio is the share a machine to itself would reach: the
	// rates' ratio moves with what else the machine runs meanwhile.
	fmt.Printf("end to end (SQLite, RSA-2048 DKIM, relay to sink): %d emails delivered at %.0f msgs/s (%.0f%% of the signing ceiling), CPU %s per email (%.0f%% of it the signing ceiling's)\n",
		*n, rate, 100*rate/signRate, cpu.Round(time.Microsecond), 100*float64(signCPU)/float64(cpu))
	return nil
}

func sampleMessage() ([]byte, error) {
	return outbound.Build(&outbound.Message{
		From:      outbound.Address{Name: "Example News", Address: "news@example.com"},
		To:        []outbound.Address{{Address: "user@example.net"}},
		Subject:   "Your receipt",
		HTML:      "<p>Hello,</p><p>thanks for your order. Your receipt is below.</p>" + string(make([]byte, 0)),
		Text:      "Hello, thanks for your order.",
		MessageID: "<em_sample@example.com>",
		Date:      time.Now(),
	})
}

func signCeiling(key crypto.Signer, msg []byte, window time.Duration, signed *int) (float64, error) {
	signer := outbound.NewSigner("example.com", "s1", key)
	var count atomic.Int64
	var firstErr atomic.Value
	stop := time.Now().Add(window)
	var wg sync.WaitGroup
	start := time.Now()
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if _, err := signer.Sign(msg); err != nil {
					firstErr.Store(err)
					return
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	*signed = int(count.Load())
	return float64(count.Load()) / time.Since(start).Seconds(), nil
}

func smtpCeiling(ctx context.Context, s *benchsink.Sink, msg []byte, workers int, window time.Duration) (float64, error) {
	relay, err := outbound.NewRelay("smtp://"+s.Addr, outbound.RelayOptions{MaxConns: max(10, workers/2)})
	if err != nil {
		return 0, err
	}
	defer relay.Close()
	var count atomic.Int64
	var firstErr atomic.Value
	stop := time.Now().Add(window)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				res, err := relay.Send(ctx, outbound.Envelope{From: "bounces+x@example.com", To: []string{"user@example.net"}}, msg)
				if err != nil || !res.Rcpts[0].OK {
					firstErr.Store(fmt.Errorf("sink refused: %v %+v", err, res))
					return
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	return float64(count.Load()) / time.Since(start).Seconds(), nil
}

// endToEnd returns the delivery rate, this process's CPU per email (node
// and sink) and its allocations (Mallocs and TotalAlloc alone) over the
// same window; memProfile, if set, names the allocation profile written
// at its end.
func endToEnd(ctx context.Context, s *benchsink.Sink, key crypto.Signer, n, workers int, memProfile string) (float64, time.Duration, runtime.MemStats, error) {
	var none runtime.MemStats
	dir, err := os.MkdirTemp("", "mailroom-bench-deliver")
	if err != nil {
		return 0, 0, none, err
	}
	defer os.RemoveAll(dir)
	env := map[string]string{
		"MAILROOM_DATABASE_URL":         dir + "/mailroom.db",
		"MAILROOM_HTTP_ADDR":            "127.0.0.1:0",
		"MAILROOM_SMTP_ADDR":            "off",
		"MAILROOM_SECRET_KEY":           "bench-secret-key-0123456789",
		"MAILROOM_OUTBOUND":             "smtp://" + s.Addr,
		"MAILROOM_DELIVERY_CONCURRENCY": strconv.Itoa(workers),
		"MAILROOM_LOG_LEVEL":            "error",
	}
	cfg, err := config.Load(config.Map(env))
	if err != nil {
		return 0, 0, none, err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	a, err := app.New(ctx, cfg, app.Options{Logger: logger})
	if err != nil {
		return 0, 0, none, err
	}
	a.Delivery().SetKeys(benchkeys.Keys{Key: key})

	// Accept the emails as the sending area does (row and job in one
	// transaction, here 500 to a transaction) before the node starts, so
	// the measured window is delivery alone.
	t0 := time.Now()
	for done := 0; done < n; {
		k := min(500, n-done)
		err := a.DB.InTx(ctx, func(tx *store.Tx) error {
			now := store.Millis(time.Now())
			var batch []jobs.EmailRef
			for i := 0; i < k; i++ {
				id := ids.New("em")
				if _, err := tx.Exec(ctx, `INSERT INTO emails (id, workspace_id, status, from_addr, to_addrs, subject, html, text_body, created_at, updated_at)
					VALUES (?, 'ws_bench', 'queued', 'Example News <news@example.com>', ?, 'Your receipt', ?, ?, ?, ?)`,
					id, fmt.Sprintf(`["user%d@example.net"]`, done+i),
					"<p>Hello,</p><p>thanks for your order. Your receipt is below.</p>", "Hello, thanks for your order.", now, now); err != nil {
					return err
				}
				// One batch job per group of sends, as the sending area's
				// group commit inserts them.
				batch = append(batch, jobs.EmailRef{EmailID: id, WorkspaceID: "ws_bench"})
				if len(batch) == 25 || i == k-1 {
					tx.AddJob(jobs.DeliverBatchArgs{Emails: batch})
					batch = nil
				}
			}
			return nil
		})
		if err != nil {
			return 0, 0, none, err
		}
		done += k
	}
	fmt.Printf("accepted %d emails in %v\n", n, time.Since(t0).Round(time.Millisecond))
	before := s.Others.Load()
	stopMem := benchload.StartMemProfile(memProfile)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, start := benchload.ProcessCPU(), time.Now()
	if err := a.Start(ctx); err != nil {
		return 0, 0, none, err
	}
	defer a.Stop(ctx)
	// Wait on the sink's count before asking the database: the count below
	// scans emails, and polled every 20 ms from the start it took a fifth
	// of the process's CPU (profiled) from the delivery it measures.
	for s.Others.Load()-before < int64(n) && time.Since(start) < 5*time.Minute {
		time.Sleep(5 * time.Millisecond)
	}
	for {
		var open int
		if err := a.DB.QueryRow(ctx, `SELECT count(*) FROM emails WHERE status IN ('queued', 'sending')`).Scan(&open); err != nil {
			return 0, 0, none, err
		}
		if open == 0 {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return 0, 0, none, fmt.Errorf("%d emails still open after 5 minutes", open)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed, cpu := time.Since(start), benchload.ProcessCPU()-cpu0
	runtime.ReadMemStats(&ms1)
	stopMem()
	alloc := runtime.MemStats{Mallocs: ms1.Mallocs - ms0.Mallocs, TotalAlloc: ms1.TotalAlloc - ms0.TotalAlloc}
	if p50, p99, err := histogramQuantiles(a, "mailroom_delivery_outcome_unsaved_seconds"); err == nil {
		fmt.Printf("duplicate window (server's answer to the outcome's commit): p50 %v, p99 %v; at %.0f msgs/s a crash re-sends about %.0f\n",
			p50, p99, float64(n)/elapsed.Seconds(), float64(n)/elapsed.Seconds()*p99.Seconds())
	}
	var delivered int
	if err := a.DB.QueryRow(ctx, `SELECT count(*) FROM emails WHERE status = 'delivered'`).Scan(&delivered); err != nil {
		return 0, 0, none, err
	}
	if delivered != n || s.Others.Load()-before < int64(n) {
		return 0, 0, none, fmt.Errorf("%d of %d delivered, %d at the sink", delivered, n, s.Others.Load()-before)
	}
	return float64(n) / elapsed.Seconds(), cpu / time.Duration(n), alloc, nil
}

// histogramQuantiles reads the median and 99th percentile of a histogram
// from the node's registry (the upper bound of the bucket holding each).
func histogramQuantiles(a *app.App, name string) (p50, p99 time.Duration, err error) {
	mfs, err := a.Registry.Gather()
	if err != nil {
		return 0, 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		at := func(q float64) time.Duration {
			want := q * float64(h.GetSampleCount())
			for _, b := range h.GetBucket() {
				if float64(b.GetCumulativeCount()) >= want {
					return time.Duration(b.GetUpperBound() * float64(time.Second))
				}
			}
			return 0
		}
		return at(0.5), at(0.99), nil
	}
	return 0, 0, fmt.Errorf("no histogram %s", name)
}
