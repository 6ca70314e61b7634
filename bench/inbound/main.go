// Command inbound measures receiving: messages with a 20 KB text body and
// one 100 KB attachment, DKIM-signed, delivered over SMTP by 16 concurrent
// clients (each reusing its connection, pipelining MAIL (with SIZE=, as MTAs
// declare it), RCPT and DATA, or
// BDAT with -bdat, and writing each message in one write) to an in-process
// node, which
// checks SPF, DKIM and DMARC against a DNS server on loopback, parses,
// stores, threads, indexes and raises email.received (a webhook endpoint
// is registered, so the event fans out to a receiver in this process) in
// one commit before it answers 250. In the same run, the ceiling: the same
// clients and messages against a go-smtp server that discards them.
//
// Then search: 100,000 messages are seeded through inbound.Service.Seed
// (the same parse, threading and index writes as receiving, a thousand a
// transaction, without the SMTP session, the DNS checks and the events)
// and GET /v1/search is timed for a common, a rare and an absent word.
//
//	go run ./bench/inbound                     # SQLite
//	go run ./bench/inbound -bdat -seed 0       # BDAT, receiving only
//	go run ./bench/inbound -pg postgres://...  # PostgreSQL (an empty database)
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-smtp"

	"mailroom/bench/internal/benchnode"
	"mailroom/bench/internal/dbcost"
	benchload "mailroom/bench/internal/load"
	"mailroom/internal/app"
	"mailroom/internal/inbound"
	"mailroom/internal/store"
	"mailroom/internal/testkit/dnstest"
	"mailroom/internal/webhooks"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench/inbound:", err)
		os.Exit(1)
	}
}

type options struct {
	n, clients, seed, searchConns int
	searchDur                     time.Duration
	pg, profile, searchProfile    string
	memProfile                    string
	bdat, keep                    bool
}

func run(ctx context.Context) error {
	var o options
	flag.IntVar(&o.n, "n", 4000, "messages received end to end (and sent to the ceiling's sink)")
	flag.IntVar(&o.clients, "c", 16, "concurrent SMTP clients")
	flag.IntVar(&o.seed, "seed", 100000, "messages stored before the search is timed (0 skips the search)")
	flag.IntVar(&o.searchConns, "sc", 4, "concurrent search requests")
	flag.DurationVar(&o.searchDur, "sd", 3*time.Second, "how long each search term is timed")
	flag.StringVar(&o.pg, "pg", "", "PostgreSQL URL (an empty database) instead of a temporary SQLite file")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of the end-to-end phase to this file")
	flag.StringVar(&o.memProfile, "memprofile", "", "write an allocation profile of the end-to-end phase to this file (every 4 KB sampled)")
	flag.StringVar(&o.searchProfile, "searchprofile", "", "write a CPU profile of the timed searches to this file")
	flag.BoolVar(&o.bdat, "bdat", false, "send with BDAT (RFC 3030 CHUNKING) instead of DATA")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (the SQLite database) for a look afterwards")
	flag.Parse()
	if o.memProfile != "" {
		runtime.MemProfileRate = 4 << 10
	}

	dir, err := os.MkdirTemp("", "mailroom-bench-inbound-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("database and data kept in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	shim := &tb{}
	defer shim.cleanup()
	dns := dnstest.Start(shim)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	dns.AddTXT("sender.example", "v=spf1 ip4:127.0.0.1 -all")
	dns.AddTXT("sel._domainkey.sender.example", "v=DKIM1; k=ed25519; p="+base64.StdEncoding.EncodeToString(pub))
	dns.AddTXT("_dmarc.sender.example", "v=DMARC1; p=reject")

	node, err := benchnode.Start(ctx, benchnode.Options{PG: o.pg, Dir: dir, LogLevel: benchnode.Errors, Env: map[string]string{
		"MAILROOM_SMTP_ADDR": "127.0.0.1:0", "MAILROOM_SERVICE_DOMAIN": "bench.test", "MAILROOM_DNS_RESOLVER": dns.Addr(),
		"MAILROOM_WEBHOOK_ALLOW_PRIVATE": "true", "MAILROOM_SMTP_MAX_SESSIONS": "1000",
	}})
	if err != nil {
		return err
	}
	defer node.Stop()
	a, ws, apiKey := node.App, node.Workspace, node.Key
	mbs, err := a.Inbound().Mailboxes(ctx, ws.ID, "")
	if err != nil {
		return err
	}
	inbox := mbs[0]

	hooks := &hookCounter{}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hsrv := &http.Server{Handler: hooks}
	go hsrv.Serve(hl)
	defer hsrv.Close()
	if _, err := a.Webhooks().Create(ctx, ws.ID, webhooks.CreateParams{URL: "http://" + hl.Addr().String() + "/hooks", Events: []string{"email.received"}}); err != nil {
		return err
	}

	gen := newGenerator(inbox.Address, key, pool)
	sample := gen.pool[0]
	fmt.Printf("cpus: %d, load: %s, database: %s, message: %d bytes (20 KB text, 100 KB attachment, DKIM-signed), clients: %d, %s\n",
		runtime.GOMAXPROCS(0), loadAvg(), a.DB.Dialect, len(sample), o.clients, map[bool]string{false: "DATA", true: "BDAT"}[o.bdat])

	// The ceiling: the same clients and messages, a go-smtp server that
	// reads each message and throws it away.
	sink, err := startSink()
	if err != nil {
		return err
	}
	defer sink.Close()
	ceil, err := deliver(sink.addr, gen, o.n, o.clients, 1_000_000, o.bdat)
	if err != nil {
		return fmt.Errorf("ceiling: %w", err)
	}
	fmt.Printf("ceiling, go-smtp sink that discards: %d messages in %s, %.0f messages/s, CPU %s per message (clients and sink)\n",
		o.n, ceil.elapsed.Round(time.Millisecond), ceil.rate(), ceil.cpuPer().Round(time.Microsecond))

	cost := dbcost.New(a.DB, filepath.Join(dir, "mailroom.db"))
	before, err := cost.Baseline(ctx)
	if err != nil {
		return err
	}
	stopProfile := benchload.StartCPUProfile(o.profile)
	stopMem := benchload.StartMemProfile(o.memProfile)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	e2e, err := deliver(a.SMTPAddr(), gen, o.n, o.clients, 0, o.bdat)
	runtime.ReadMemStats(&ms1)
	stopMem()
	stopProfile()
	if err != nil {
		return fmt.Errorf("end to end: %w", err)
	}
	fmt.Println(commitStats(a))
	// Allocations do not depend on the machine's load as time does
	// (River's polling and the webhook deliveries that fall in the run
	// are counted too).
	fmt.Printf("end to end allocations: %.0f per message, %.0f KB per message (the process: clients, node, dispatch)\n",
		float64(ms1.Mallocs-ms0.Mallocs)/float64(o.n), float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(o.n)/1024)
	// Every 250 came after the commit of the message and its event; the
	// webhook deliveries follow on their own.
	announced := hooks.wait(o.n, 2*time.Minute)
	fmt.Printf("end to end: %d messages in %s; email.received webhooks delivered: %d of %d, all by %s after the last 250\n",
		o.n, e2e.elapsed.Round(time.Millisecond), hooks.n.Load(), o.n, max(0, announced).Round(time.Millisecond))
	after, err := cost.Settle(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	compacted, err := cost.Compact(ctx)
	if err != nil {
		return err
	}
	dbcost.Report(os.Stdout, "received message (with its email.received webhook)", o.n, before, after, compacted)
	stored, err := a.Inbound().Messages(ctx, inbound.Reader{WorkspaceID: ws.ID}, inbound.MessageFilter{Limit: 1})
	if err != nil || len(stored) == 0 || len(stored[0].Parts) != 1 || stored[0].Auth.DKIM != "pass" {
		return fmt.Errorf("the stored message is not as sent: %v %+v", err, stored)
	}

	if o.seed > 0 {
		if err := searchBench(ctx, a, ws.ID, apiKey, inbox, o); err != nil {
			return err
		}
	}
	fmt.Printf("RESULT inbound %s: %.0f messages/s end to end (target 1,000), CPU %s per message (clients included; the sink's run: %s), ceiling %.0f messages/s (%.0f%% of it), load %s\n",
		a.DB.Dialect, e2e.rate(), e2e.cpuPer().Round(time.Microsecond), ceil.cpuPer().Round(time.Microsecond), ceil.rate(), 100*e2e.rate()/ceil.rate(), loadAvg())
	return nil
}

// pool is how many distinct signed messages are built before the runs
// (building and signing in the timed loop cost more CPU than the sink).
const pool = 256

// generator holds distinct messages of the same shape, signed by
// sender.example; message i is pool[i%pool].
type generator struct {
	to     string
	key    ed25519.PrivateKey
	body   string // 20 KB of words
	attach string // 100 KB, base64 in 76-column lines
	pool   [][]byte
	dotted [][]byte // pool dot-stuffed for DATA
}

var words = strings.Fields("invoice meeting schedule project budget report review contract delivery customer support update quarter planning design")

func newGenerator(to string, key ed25519.PrivateKey, n int) *generator {
	var b strings.Builder
	for i := 0; b.Len() < 20*1024; i++ {
		b.WriteString(words[i%len(words)])
		if i%12 == 11 {
			b.WriteString("\r\n")
		} else {
			b.WriteByte(' ')
		}
	}
	raw := make([]byte, 100*1024)
	_, _ = rand.Read(raw)
	enc := base64.StdEncoding.EncodeToString(raw)
	var att strings.Builder
	for len(enc) > 76 {
		att.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	att.WriteString(enc + "\r\n")
	g := &generator{to: to, key: key, body: b.String(), attach: att.String()}
	for i := range n {
		g.pool = append(g.pool, g.build(i))
		g.dotted = append(g.dotted, dotStuff(g.pool[i]))
	}
	return g
}

func (g *generator) message(i int) []byte { return g.pool[i%len(g.pool)] }

// stuffed is message i as DATA carries it: dot-stuffed, ending ".\r\n".
func (g *generator) stuffed(i int) []byte { return g.dotted[i%len(g.dotted)] }

// dotStuff doubles the dot that starts a line (RFC 5321 4.5.2) and ends
// the message with the lone dot.
func dotStuff(msg []byte) []byte {
	out := make([]byte, 0, len(msg)+len(msg)/64+3)
	if bytes.HasPrefix(msg, []byte(".")) {
		out = append(out, '.')
	}
	for len(msg) > 0 {
		i := bytes.Index(msg, []byte("\n."))
		if i < 0 {
			out = append(out, msg...)
			break
		}
		out = append(out, msg[:i+2]...)
		out = append(out, '.')
		msg = msg[i+2:]
	}
	if !bytes.HasSuffix(out, []byte("\r\n")) {
		out = append(out, "\r\n"...)
	}
	return append(out, ".\r\n"...)
}

func (g *generator) build(i int) []byte {
	raw := fmt.Sprintf("From: Ann Sender <ann@sender.example>\r\nTo: %s\r\nSubject: Report %d for the quarter\r\n"+
		"Date: %s\r\nMessage-ID: <bench-%d-%d@sender.example>\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n"+
		"--b1\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"report-%d.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\n%s--b1--\r\n",
		g.to, i, time.Now().Format(time.RFC1123Z), time.Now().UnixNano(), i, g.body, i, g.attach)
	var b bytes.Buffer
	err := dkim.Sign(&b, strings.NewReader(raw), &dkim.SignOptions{Domain: "sender.example", Selector: "sel", Signer: g.key,
		HeaderKeys: []string{"From", "To", "Subject", "Date", "Message-ID"}})
	if err != nil {
		panic(err)
	}
	return b.Bytes()
}

type measured struct {
	n       int
	elapsed time.Duration
	cpu     time.Duration
}

func (r measured) rate() float64         { return float64(r.n) / r.elapsed.Seconds() }
func (r measured) cpuPer() time.Duration { return r.cpu / time.Duration(r.n) }

// deliver sends n messages to addr over clients connections, each reused
// message after message; offset keeps the messages distinct across runs.
func deliver(addr string, g *generator, n, clients, offset int, bdat bool) (measured, error) {
	cs := make([]*client, clients)
	for i := range cs {
		c, err := dialClient(addr, bdat)
		if err != nil {
			return measured{}, err
		}
		cs[i] = c
	}
	defer func() {
		for _, c := range cs {
			c.quit()
		}
	}()
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	cpu0, start := benchload.ProcessCPU(), time.Now()
	for _, c := range cs {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := c.send("ann@sender.example", g.to, g.message(offset+i), g.stuffed(offset+i)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	r := measured{n: n, elapsed: time.Since(start), cpu: benchload.ProcessCPU() - cpu0}
	if err, ok := firstErr.Load().(error); ok {
		return r, err
	}
	return r, nil
}

// client is the load generator's SMTP client: it pipelines MAIL, RCPT
// and DATA (or BDAT) and writes each message in one write, dot-stuffed
// beforehand: go-smtp's client stuffs byte by byte, which cost the
// generator as much CPU as the node spent reading the bytes.
type client struct {
	conn net.Conn
	r    *textproto.Reader
	bdat bool
}

func dialClient(addr string, bdat bool) (*client, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &client{conn: conn, r: textproto.NewReader(bufio.NewReader(conn)), bdat: bdat}
	if _, _, err := c.r.ReadResponse(220); err != nil {
		conn.Close()
		return nil, err
	}
	if _, err := io.WriteString(conn, "EHLO mx.sender.example\r\n"); err != nil {
		conn.Close()
		return nil, err
	}
	_, ext, err := c.r.ReadResponse(250)
	if err == nil && !strings.Contains(ext, "PIPELINING") || bdat && !strings.Contains(ext, "CHUNKING") {
		err = fmt.Errorf("the server does not offer PIPELINING and CHUNKING: %s", ext)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// send delivers msg (stuffed: the same, as DATA carries it) from one
// sender to one recipient.
func (c *client) send(from, to string, msg, stuffed []byte) error {
	cmds := "MAIL FROM:<" + from + "> SIZE=" + strconv.Itoa(len(msg)) + "\r\nRCPT TO:<" + to + ">\r\n"
	bufs := net.Buffers{[]byte(cmds + "DATA\r\n")}
	if c.bdat {
		bufs = net.Buffers{[]byte(cmds + "BDAT " + strconv.Itoa(len(msg)) + " LAST\r\n"), msg}
	}
	if _, err := bufs.WriteTo(c.conn); err != nil {
		return err
	}
	for range 2 {
		if _, _, err := c.r.ReadResponse(250); err != nil {
			return err
		}
	}
	if !c.bdat {
		if _, _, err := c.r.ReadResponse(354); err != nil {
			return err
		}
		if _, err := c.conn.Write(stuffed); err != nil {
			return err
		}
	}
	_, _, err := c.r.ReadResponse(250)
	return err
}

func (c *client) quit() {
	if _, err := io.WriteString(c.conn, "QUIT\r\n"); err == nil {
		c.r.ReadResponse(221)
	}
	c.conn.Close()
}

// searchBench seeds o.seed messages and times GET /v1/search.
func searchBench(ctx context.Context, a *app.App, wsID, key string, inbox inbound.Mailbox, o options) error {
	have := o.n // received above
	start := time.Now()
	const chunk = 1000
	for done := have; done < o.seed; {
		k := min(chunk, o.seed-done)
		raws := make([][]byte, k)
		for i := range raws {
			raws[i] = seedMessage(inbox.Address, done+i)
		}
		if err := a.Inbound().Seed(ctx, &inbox, raws); err != nil {
			return err
		}
		done += k
	}
	fmt.Printf("seeded %d messages (%d received above) through inbound.Service.Seed in %s\n", o.seed-have, have, time.Since(start).Round(time.Millisecond))
	if a.DB.Dialect == store.Postgres {
		// What autovacuum gets to within a minute or two in service: the
		// GIN index's pending entries merged, the word statistics the
		// planner chooses by.
		if _, err := a.DB.W.ExecContext(ctx, `VACUUM ANALYZE messages`); err != nil {
			return err
		}
		fmt.Println("VACUUM ANALYZE messages done")
	} else {
		// What the next writes get to in service: the log copied into the
		// database and started over. Left as the seed ends it, reads find
		// part of the index in the log (read by syscall, not mapped) and
		// the figures depend on how the last commits met the checkpoints.
		if _, err := a.DB.W.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return err
		}
		fmt.Println("wal_checkpoint(TRUNCATE) done")
	}
	base := "http://" + a.HTTPAddr() + "/v1/search?q="
	defer benchload.StartCPUProfile(o.searchProfile)()
	for _, term := range []struct{ name, q string }{
		{"common word (in every message)", "invoice"},
		{"rare word (1 in 1,000)", "zephyr"},
		{"two words, one rare", "zephyr budget"},
		{"absent word", "xylograph"},
	} {
		r := benchload.JSONRequest("GET", base+url.QueryEscape(term.q), key, nil)
		benchload.Run(o.searchConns, 300*time.Millisecond, 200, r)
		cpu0 := benchload.ProcessCPU()
		res := benchload.Run(o.searchConns, o.searchDur, 200, r)
		cpu := benchload.ProcessCPU() - cpu0
		fmt.Printf("GET /v1/search?q=%s, %s: p50 %.2f ms, p99 %.2f ms (target 50), %.0f req/s, CPU %s per search, %d errors\n",
			term.q, term.name, ms(res.P50), ms(res.P99), res.PerSecond(), (cpu / time.Duration(max(1, res.Requests))).Round(time.Microsecond), res.Errors)
	}
	return nil
}

// seedMessage is a small distinct message: every one holds "invoice", one
// in a thousand "zephyr".
func seedMessage(to string, i int) []byte {
	extra := ""
	if i%1000 == 7 {
		extra = " zephyr"
	}
	var b strings.Builder
	for j := range 60 {
		b.WriteString(words[(i+j)%len(words)])
		b.WriteByte(' ')
	}
	return []byte(fmt.Sprintf("From: Person %d <p%d@sender%d.example>\r\nTo: %s\r\nSubject: Note %d about the %s%s\r\nDate: %s\r\nMessage-ID: <seed-%d@sender.example>\r\n\r\ninvoice %s%s\r\n",
		i, i, i%50, to, i, words[i%len(words)], extra, time.Now().Format(time.RFC1123Z), i, b.String(), extra))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// hookCounter is the webhook endpoint: it counts deliveries.
type hookCounter struct {
	n    atomic.Int64
	last atomic.Int64 // unix nanos of the last delivery
}

func (h *hookCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	h.n.Add(1)
	h.last.Store(time.Now().UnixNano())
	w.WriteHeader(http.StatusNoContent)
}

// wait waits for n deliveries (up to max) and returns how long after its
// start the last one came (negative: before it started).
func (h *hookCounter) wait(n int, max time.Duration) time.Duration {
	start := time.Now()
	for int(h.n.Load()) < n && time.Since(start) < max {
		time.Sleep(20 * time.Millisecond)
	}
	if last := h.last.Load(); last > 0 {
		return time.Unix(0, last).Sub(start)
	}
	return 0
}

// sink is a go-smtp server that accepts every message and discards it.
type sink struct {
	srv  *smtp.Server
	addr string
}

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := smtp.NewServer(discard{})
	srv.Domain = "sink.test"
	srv.MaxMessageBytes = 40 << 20
	srv.AllowInsecureAuth = true
	go srv.Serve(ln)
	return &sink{srv: srv, addr: ln.Addr().String()}, nil
}

func (s *sink) Close() { s.srv.Close() }

type discard struct{}

func (discard) NewSession(*smtp.Conn) (smtp.Session, error) { return discardSession{}, nil }

type discardSession struct{}

func (discardSession) Mail(string, *smtp.MailOptions) error { return nil }
func (discardSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (discardSession) Data(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
func (discardSession) Reset()        {}
func (discardSession) Logout() error { return nil }

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

// tb lets dnstest, written for tests, run in this command.
type tb struct {
	testing.TB
	cleanups []func()
}

func (*tb) Helper()                           {}
func (*tb) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *tb) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (t *tb) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// commitStats summarises the receiving group committer's metrics so far.
func commitStats(a *app.App) string {
	mfs, err := a.Registry.Gather()
	if err != nil {
		return "commits: " + err.Error()
	}
	sums := map[string][2]float64{} // metric -> count, sum
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "committer" && l.GetValue() == "inbound" && m.GetHistogram() != nil {
					sums[mf.GetName()] = [2]float64{float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()}
				}
			}
		}
	}
	w, c, f := sums["mailroom_group_commit_writes"], sums["mailroom_group_commit_seconds"], sums["mailroom_group_commit_flush_seconds"]
	return fmt.Sprintf("receiving commits: %.0f, %.1f messages each, %.2f ms statements and COMMIT, %.2f ms flush (means)",
		w[0], w[1]/max(1, w[0]), 1000*c[1]/max(1, c[0]), 1000*f[1]/max(1, f[0]))
}
