// Command automations measures automation runs end to end: an in-process
// node on SQLite (or PostgreSQL with -pg) with the flow tag.added → send →
// wait 1s → if → tag, and one import that adds the tag to N contacts
// (test addresses, so the sends are played out without a server). While
// the runs go, a transactional send is accepted every 100 ms and its
// accept-to-sink time at an SMTP sink on loopback is noted. It reports the
// time from the import call to the last run completed; the last line is
// the headline.
//
//	go run ./bench/automations [-n 10000] [-pg postgres://...]
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"flag"
	"fmt"
	"mailroom/bench/internal/benchnode"
	"mailroom/bench/internal/benchsink"
	"os"
	"runtime/pprof"
	"time"

	"mailroom/bench/internal/benchkeys"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "automations:", err)
		os.Exit(1)
	}
}

const flow = `name: Bench flow
trigger: { event: tag.added, tag: trial }
steps:
  - send: { template: hello, from: onboarding@mailroom.localhost }
  - wait: 1s
  - if: { field: tag, op: has, value: trial }
    then: [ { tag: { add: [onboarded] } } ]
`

func run() error {
	n := flag.Int("n", 10000, "contacts tagged by the import (at most 10000, the import's limit)")
	pg := flag.String("pg", "", "PostgreSQL URL (default: embedded SQLite in a temp dir)")
	verbose := flag.Bool("v", false, "print the runs by status every 2 s")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the runs to this file")
	flag.Parse()
	ctx := context.Background()
	s, err := benchsink.Start()
	if err != nil {
		return err
	}
	defer s.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	node, err := benchnode.Start(ctx, benchnode.Options{PG: *pg, LogLevel: benchnode.Errors, Env: map[string]string{"MAILROOM_OUTBOUND": "smtp://" + s.Addr}})
	if err != nil {
		return err
	}
	defer node.Stop()
	a, call := node.App, node.Call
	a.Delivery().SetKeys(benchkeys.Keys{Key: key})
	if _, err := call("POST", "/v1/templates", map[string]any{"name": "Hello", "subject": "Hello", "text": "Hi {{ email }}", "publish": true}); err != nil {
		return err
	}
	aut, err := call("POST", "/v1/automations", map[string]any{"yaml": flow})
	if err != nil {
		return err
	}
	aud, err := call("POST", "/v1/audiences", map[string]any{"name": "Everyone"})
	if err != nil {
		return err
	}
	rows := make([]any, *n)
	for i := range rows {
		rows[i] = map[string]any{"email": fmt.Sprintf("delivered+b%05d@mailroom.localhost", i), "tags": []string{"trial"}}
	}

	// Transactional sends every 100 ms while the runs go.
	probe := s.Probe(func(subject string) error {
		_, err := call("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.localhost", "to": benchnode.Owner, "subject": subject, "text": "your code"})
		return err
	})

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	if _, err := call("POST", "/v1/audiences/"+aud["id"].(string)+"/contacts", rows); err != nil {
		return err
	}
	imported := time.Since(start)
	count := func(status string) int {
		var c int
		_ = a.DB.QueryRow(ctx, `SELECT COUNT(*) FROM automation_runs WHERE automation_id = ? AND status = ?`, aut["id"], status).Scan(&c)
		return c
	}
	lastLog := time.Now()
	for done := 0; done < *n; done = count("completed") {
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("only %d of %d runs completed after 10 minutes (%d failed)", done, *n, count("failed"))
		}
		time.Sleep(100 * time.Millisecond)
		if *verbose && time.Since(lastLog) > 2*time.Second {
			lastLog = time.Now()
			fmt.Fprintf(os.Stderr, "%5.1fs running %d waiting %d completed %d\n", time.Since(start).Seconds(), count("running"), count("waiting"), count("completed"))
		}
	}
	elapsed := time.Since(start)
	sent, p99, err := probe.Stop()
	if err != nil {
		return err
	}
	fmt.Printf("import of %d tagged contacts answered in %v\n", *n, imported.Round(time.Millisecond))
	fmt.Printf("transactional sends during the runs: %d, p99 accept-to-sink %v (ceiling 2s)\n", sent, p99.Round(time.Millisecond))
	fmt.Printf("automation runs: %d of %d completed (send, wait 1s, if, tag) %v after the import call (ceiling 60s)\n", *n, *n, elapsed.Round(time.Millisecond))
	return nil
}
