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
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"mailroom/bench/internal/benchnode"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

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
	s, err := startSink()
	if err != nil {
		return err
	}
	defer s.srv.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	dir, _ := os.MkdirTemp("", "mailroom-bench-automations")
	defer os.RemoveAll(dir)
	dbURL := dir + "/mailroom.db"
	if *pg != "" {
		dbURL = *pg
	}
	node, err := benchnode.Start(ctx, benchnode.Options{Dir: dir, LogLevel: benchnode.Errors, Env: map[string]string{"MAILROOM_DATABASE_URL": dbURL, "MAILROOM_OUTBOUND": "smtp://" + s.addr}})
	if err != nil {
		return err
	}
	defer node.Stop()
	a, apiKey := node.App, node.Key
	a.Delivery().SetKeys(benchkeys.Keys{Key: key})
	base := "http://" + a.HTTPAddr()
	call := func(method, path string, body any) (map[string]any, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if resp.StatusCode >= 300 {
			return m, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		return m, nil
	}
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
	var (
		mu      sync.Mutex
		accepts = map[int]time.Time{}
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			at := time.Now()
			if _, err := call("POST", "/v1/emails", map[string]any{"from": "onboarding@mailroom.localhost", "to": "owner@example.com",
				"subject": fmt.Sprint("Txn ", i), "text": "your code"}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				continue
			}
			mu.Lock()
			accepts[i] = at
			mu.Unlock()
		}
	}()

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
	close(stop)
	wg.Wait()
	time.Sleep(2 * time.Second) // the last transactional sends
	var lat []time.Duration
	mu.Lock()
	s.mu.Lock()
	for i, at := range accepts {
		if got, ok := s.txn[i]; ok {
			lat = append(lat, got.Sub(at))
		} else {
			lat = append(lat, time.Hour) // never arrived: counts as worst
		}
	}
	s.mu.Unlock()
	mu.Unlock()
	slices.Sort(lat)
	p99 := time.Duration(0)
	if len(lat) > 0 {
		p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	fmt.Printf("import of %d tagged contacts answered in %v\n", *n, imported.Round(time.Millisecond))
	fmt.Printf("transactional sends during the runs: %d, p99 accept-to-sink %v (ceiling 2s)\n", len(lat), p99.Round(time.Millisecond))
	fmt.Printf("automation runs: %d of %d completed (send, wait 1s, if, tag) %v after the import call (ceiling 60s)\n", *n, *n, elapsed.Round(time.Millisecond))
	return nil
}

var txnSubject = regexp.MustCompile(`(?m)^Subject: Txn (\d+)\r?$`)

// sink is a go-smtp server on loopback that notes when each transactional
// message arrives.
type sink struct {
	srv  *smtp.Server
	addr string
	mu   sync.Mutex
	txn  map[int]time.Time
}

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{addr: ln.Addr().String(), txn: map[int]time.Time{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &sinkSession{s: s}, nil }))
	srv.Domain = "sink.localhost"
	srv.MaxMessageBytes = 64 << 20
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv = srv
	go srv.Serve(ln)
	return s, nil
}

type sinkSession struct{ s *sink }

func (ss *sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (ss *sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (ss *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if m := txnSubject.FindSubmatch(b); m != nil {
		i, _ := strconv.Atoi(string(m[1]))
		ss.s.mu.Lock()
		ss.s.txn[i] = time.Now()
		ss.s.mu.Unlock()
	}
	return nil
}
func (ss *sinkSession) Reset()        {}
func (ss *sinkSession) Logout() error { return nil }
