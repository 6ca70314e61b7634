// Command submission measures how many messages a Mailroom node accepts
// per second over SMTP submission (16 concurrent clients, each reusing its
// authenticated connection for message after message) beside POST
// /v1/emails at the same concurrency, in the same run, on the same node.
// The two are measured in alternating one-second slices (HTTP, SMTP, SMTP,
// HTTP, ...) so that both see the same machine. Every accepted message is
// a committed email (250 or 200 come after the commit).
//
//	go run ./bench/submission                    # SQLite
//	go run ./bench/submission -pg postgres://... # PostgreSQL instead
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"mailroom/bench/internal/benchnode"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/submission:", err)
		os.Exit(1)
	}
}

const (
	from = "onboarding@bench.test"
	to   = "delivered@bench.test"
)

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("submission", flag.ContinueOnError)
	d := fs.Duration("d", 10*time.Second, "duration of each measurement")
	conns := fs.Int("c", 16, "concurrent clients of each kind")
	pg := fs.String("pg", "", "PostgreSQL URL (an empty database) instead of a temporary SQLite file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	node, err := benchnode.Start(ctx, benchnode.Options{PG: *pg, LogLevel: benchnode.Errors, Env: map[string]string{
		"MAILROOM_SUBMISSION_ADDR": "127.0.0.1:0", "MAILROOM_SERVICE_DOMAIN": "bench.test",
	}})
	if err != nil {
		return err
	}
	defer node.Stop()
	a, key := node.App, node.Key
	h := &httpLoad{url: "http://" + a.HTTPAddr() + "/v1/emails", key: key,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conns}}}
	s, err := newSMTPLoad(a.SubmissionAddr(), key, *conns)
	if err != nil {
		return err
	}
	defer s.close()

	var httpN, smtpN, httpErr, smtpErr atomic.Int64
	var httpT, smtpT time.Duration
	slice := time.Second
	for i := 0; time.Duration(i/2)*slice < *d; i++ {
		// HTTP, SMTP, SMTP, HTTP, HTTP, ...: each kind sees the early and
		// the late machine alike.
		smtpTurn := (i%4 == 1 || i%4 == 2)
		start := time.Now()
		end := start.Add(slice)
		var wg sync.WaitGroup
		for c := 0; c < *conns; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					if smtpTurn {
						count(s.send(c), &smtpN, &smtpErr)
					} else {
						count(h.send(), &httpN, &httpErr)
					}
				}
			}()
		}
		wg.Wait()
		if smtpTurn {
			smtpT += time.Since(start)
		} else {
			httpT += time.Since(start)
		}
	}
	hr, sr := float64(httpN.Load())/httpT.Seconds(), float64(smtpN.Load())/smtpT.Seconds()
	fmt.Fprintf(out, "POST /v1/emails, %d clients: %8.0f accepted/s (errors %d)\n", *conns, hr, httpErr.Load())
	fmt.Fprintf(out, "SMTP submission, %d clients reusing connections: %8.0f accepted/s (errors %d)\n", *conns, sr, smtpErr.Load())
	fmt.Fprintf(out, "SMTP / HTTP: %.2f (target at least 0.50)\n", sr/hr)
	return nil
}

func count(err error, ok, bad *atomic.Int64) {
	if err != nil {
		bad.Add(1)
		return
	}
	ok.Add(1)
}

type httpLoad struct {
	url, key string
	client   *http.Client
}

var sendBody = []byte(`{"from":"` + from + `","to":"` + to + `","subject":"Bench","text":"Hello from the benchmark."}`)

func (h *httpLoad) send() error {
	req, _ := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(sendBody))
	req.Header.Set("Authorization", "Bearer "+h.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// smtpLoad holds one authenticated connection per client.
type smtpLoad struct{ clients []*smtp.Client }

var message = []byte("From: " + from + "\r\nTo: " + to + "\r\nSubject: Bench\r\n\r\nHello from the benchmark.\r\n")

func newSMTPLoad(addr, key string, n int) (*smtpLoad, error) {
	l := &smtpLoad{}
	for range n {
		c, err := smtp.Dial(addr)
		if err != nil {
			return nil, err
		}
		if err := c.Hello("bench.example"); err != nil {
			return nil, err
		}
		if err := c.Auth(sasl.NewPlainClient("", "bench", key)); err != nil {
			return nil, err
		}
		l.clients = append(l.clients, c)
	}
	return l, nil
}

func (l *smtpLoad) send(i int) error {
	return l.clients[i].SendMail(from, []string{to}, bytes.NewReader(message))
}

func (l *smtpLoad) close() {
	for _, c := range l.clients {
		c.Close()
	}
}
