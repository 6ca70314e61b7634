package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailroom/internal/outbound"
	"mailroom/internal/store"
	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/smtpsink"
	"mailroom/internal/testkit/testdb"
)

// recoverySends is how many real sends the crash tests accept before the kill.
const recoverySends = 2000

// crashRig is a slow SMTP sink (so that the kill finds deliveries in flight)
// and the environment of nodes relaying to it.
type crashRig struct {
	t     *testing.T
	bin   string
	sink  *smtpsink.Sink
	slow  atomic.Bool // the sink takes 100 ms per message until the kill
	dbURL string
	env   []string // without MAILROOM_HTTP_ADDR
}

func newCrashRig(t *testing.T, dbURL string) *crashRig {
	t.Helper()
	r := &crashRig{t: t, bin: binary.Build(t), dbURL: dbURL}
	r.slow.Store(true)
	r.sink = smtpsink.Start(t, smtpsink.WithHandler(func(string, []string, []byte) error {
		if r.slow.Load() {
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	}))
	dir := t.TempDir()
	r.env = append(os.Environ(), "MAILROOM_SMTP_ADDR=off", "MAILROOM_DATABASE_URL="+dbURL, "MAILROOM_DATA_DIR="+dir,
		"MAILROOM_SECRET_KEY=recovery-test-secret-0123456789", "MAILROOM_SERVICE_DOMAIN=mailroom.test",
		"MAILROOM_OUTBOUND=smtp://"+r.sink.Addr(), "MAILROOM_RATE_LIMIT=100000000", "MAILROOM_LOG_LEVEL=warn")
	// No MAILROOM_JOB_RESCUE_AFTER: River's stuck-job rescue (5 min) must
	// not be what brings the mail back.
	return r
}

// serve starts a node on addr and waits until it answers.
func (r *crashRig) serve(addr string) (*exec.Cmd, *bytes.Buffer) {
	r.t.Helper()
	logs := &bytes.Buffer{}
	cmd := binary.Serve(r.t, r.bin, append(r.env, "MAILROOM_HTTP_ADDR="+addr), logs)
	binary.WaitHealthy(r.t, addr, 30*time.Second, logs)
	return cmd, logs
}

// workspace creates a workspace with the CLI (while a node serves) and
// returns its API key.
func (r *crashRig) workspace() string {
	r.t.Helper()
	create := exec.Command(r.bin, "workspace", "create", "--name", "Recovery", "--owner-email", "owner@example.com")
	create.Env = r.env
	out, err := create.Output()
	if err != nil {
		r.t.Fatalf("workspace create while serving: %v", err)
	}
	var ws map[string]string
	if err := json.Unmarshal(out, &ws); err != nil {
		r.t.Fatal(err)
	}
	return ws["api_key"]
}

// send posts recoverySends real sends (to the workspace owner, whom the
// sandbox sender reaches, so each goes through delivery to the sink) over
// 16 connections, spread over addrs, and returns the ids answered 200.
func (r *crashRig) send(key string, addrs ...string) []string {
	r.t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var mu sync.Mutex
	var accepted []string
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > recoverySends {
					return
				}
				body := fmt.Appendf(nil, `{"from":"onboarding@mailroom.test","to":"owner@example.com","subject":"n%d","text":"hello %d"}`, i, i)
				req, _ := http.NewRequest(http.MethodPost, "http://"+addrs[w%len(addrs)]+"/v1/emails", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					r.t.Errorf("send %d: %v", i, err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var m struct{ ID string }
				if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &m) != nil || m.ID == "" {
					r.t.Errorf("send %d: %d %s", i, resp.StatusCode, b)
					return
				}
				mu.Lock()
				accepted = append(accepted, m.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if r.t.Failed() {
		r.t.FailNow()
	}
	return accepted
}

// killMidDelivery waits until some mail reached the sink, kills node with
// SIGKILL, checks that it left jobs running (the work to take up: River
// names the node, whose id holds its pid, in attempted_by), then lets the
// sink run at full speed.
func (r *crashRig) killMidDelivery(node *exec.Cmd, logs *bytes.Buffer) (killedAt time.Time) {
	r.t.Helper()
	r.sink.WaitFor(200, 30*time.Second) // the sink signals each message
	if err := node.Process.Kill(); err != nil {
		r.t.Fatal(err)
	}
	node.Wait()
	killedAt = time.Now()
	atKill := r.sink.Count()
	r.slow.Store(false)
	if atKill >= recoverySends {
		r.t.Fatalf("every email reached the sink before the kill; the test proves nothing")
	}
	db, err := store.Open(context.Background(), r.dbURL)
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	lastBy := `json_extract(attempted_by, '$[#-1]')`
	if db.Dialect == store.Postgres {
		lastBy = `attempted_by[array_length(attempted_by, 1)]`
	}
	var running int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE state = 'running' AND `+lastBy+` LIKE ?`,
		fmt.Sprintf("%%_%d_%%", node.Process.Pid)).Scan(&running); err != nil {
		r.t.Fatal(err)
	}
	if running == 0 {
		r.t.Fatalf("the kill left no job running (%d messages at the sink); the test proves nothing\n%s", atKill, logs)
	}
	r.t.Logf("SIGKILL with %d messages at the sink and %d of its jobs running", atKill, running)
	return killedAt
}

// waitAll waits until every accepted email reached the sink (by its VERP
// return path) and returns when the last of them first arrived.
func (r *crashRig) waitAll(accepted []string, within time.Duration, logs fmt.Stringer) time.Time {
	r.t.Helper()
	want := make(map[string]bool, len(accepted))
	for _, id := range accepted {
		want[id] = true
	}
	first := map[string]time.Time{}
	seen := 0
	// Each message is looked at once, as it arrives.
	if _, ok := r.sink.WaitMatch(within, func(m smtpsink.Message) bool {
		seen++
		id, ok := outbound.UnverifiedVERPID(m.From)
		if !ok {
			r.t.Fatalf("message with return path %q", m.From)
		}
		if _, dup := first[id]; !dup && want[id] {
			first[id] = m.Received
		}
		return len(first) == len(want)
	}); !ok {
		r.t.Fatalf("%d of %d accepted emails not at the sink %v after the restart\n%s", len(want)-len(first), len(want), within, logs)
	}
	var last time.Time
	for _, at := range first {
		if at.After(last) {
			last = at
		}
	}
	r.t.Logf("%d messages at the sink for %d accepted emails (%d repeated)", seen, len(want), seen-len(want))
	return last
}

// TestSQLiteRestartResumesDeliveryAtOnce: 2,000 real sends, SIGKILL while
// deliveries are in flight, restart; the restarted process owns the file
// (a second serve is refused meanwhile) and takes up the jobs the dead one
// left running at start, so every accepted email reaches the sink within
// seconds of the restart instead of after River's stuck-job rescue.
func TestSQLiteRestartResumesDeliveryAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if testdb.IsPostgres() {
		t.Skip("SQLite only; TestPostgresNodeTakesUpDeadNodesWork covers PostgreSQL")
	}
	r := newCrashRig(t, filepath.Join(t.TempDir(), "mailroom.db"))
	// Longer than the test waits: only the owner's take-up at start, not
	// the heartbeat timeout, can bring the mail back in time.
	r.env = append(r.env, "MAILROOM_NODE_TIMEOUT=2m")
	addr := binary.FreeAddr(t)
	node, logs := r.serve(addr)
	key := r.workspace()

	// A second serve on the same file is refused, with a message that says why.
	second := exec.Command(r.bin, "serve")
	second.Env = append(r.env, "MAILROOM_HTTP_ADDR="+binary.FreeAddr(t))
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another `mailroom serve` holds") {
		t.Fatalf("second serve on the same SQLite file: %v\n%s", err, out)
	}

	began := time.Now()
	accepted := r.send(key, addr)
	t.Logf("%d sends accepted in %v", len(accepted), time.Since(began).Round(time.Millisecond))
	r.killMidDelivery(node, logs)

	restart := time.Now()
	_, logs = r.serve(addr)
	healthy := time.Since(restart)
	last := r.waitAll(accepted, 60*time.Second, logs)
	t.Logf("MEASURED sqlite: restart -> last accepted email at the sink %v (serving after %v)",
		max(last.Sub(restart), 0).Round(time.Millisecond), healthy.Round(time.Millisecond))
}

// TestPostgresNodeTakesUpDeadNodesWork: two nodes on one PostgreSQL
// database share 2,000 real sends; one is killed with SIGKILL while
// deliveries are in flight and the other, once the dead node's heartbeat is
// older than MAILROOM_NODE_TIMEOUT (15 s), takes up its running jobs: every
// accepted email reaches the sink within 60 s of the kill.
func TestPostgresNodeTakesUpDeadNodesWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if !testdb.IsPostgres() {
		t.Skip("needs MAILROOM_TEST_DATABASE_URL (PostgreSQL)")
	}
	r := newCrashRig(t, testdb.URL(t))
	if u := os.Getenv("MAILROOM_TEST_REDIS_URL"); u != "" {
		r.env = append(r.env, "MAILROOM_REDIS_URL="+u) // as several nodes run in production
	}
	addrA, addrB := binary.FreeAddr(t), binary.FreeAddr(t)
	a, logsA := r.serve(addrA)
	_, logsB := r.serve(addrB)
	key := r.workspace()
	began := time.Now()
	accepted := r.send(key, addrA, addrB)
	t.Logf("%d sends accepted in %v", len(accepted), time.Since(began).Round(time.Millisecond))
	killed := r.killMidDelivery(a, logsA)
	last := r.waitAll(accepted, 60*time.Second, logsB)
	t.Logf("MEASURED postgres, two nodes: kill -> last accepted email at the sink %v (node timeout 15s)",
		max(last.Sub(killed), 0).Round(time.Millisecond))
}
