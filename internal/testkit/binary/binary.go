// Package binary builds the real mailroom binary for tests that must run it
// as a separate process (SIGTERM and SIGKILL tests), once per test binary,
// and runs it as a Node that a test can kill and start again.
package binary

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/testkit/testdb"
)

var (
	once  sync.Once
	path  string
	dir   string
	built error
	out   []byte
)

// Build returns the path of a freshly built mailroom binary.
func Build(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, built = os.MkdirTemp("", "mailroom-bin")
		if built != nil {
			return
		}
		path = filepath.Join(dir, "mailroom")
		out, built = exec.Command("go", "build", "-o", path, "mailroom/cmd/mailroom").CombinedOutput()
	})
	if built != nil {
		t.Fatalf("building mailroom: %v\n%s", built, out)
	}
	return path
}

// FreeAddr returns a 127.0.0.1 address with a port nobody listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	// Below the kernel's ephemeral range (32768 and up on Linux): a port
	// from :0 may be handed to an outgoing connection (a database client's)
	// before the node binds it, which failed a restart with EADDRINUSE.
	for range 50 {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))); err == nil {
			ln.Close()
			return ln.Addr().String()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Serve starts `mailroom serve` with env (the whole environment) and its
// standard error going to stderr. The process is killed when the test ends
// unless the test waited for it already.
func Serve(t testing.TB, bin string, env []string, stderr io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// WaitHealthy polls http://addr/healthz until it answers, failing the test
// with logs after timeout.
func WaitHealthy(t testing.TB, addr string, timeout time.Duration, logs fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never healthy: %s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Node is one `mailroom serve` process of a test, run again after a kill
// with the same environment: the harness of the kill -9 tests.
type Node struct {
	t    testing.TB
	Bin  string
	Addr string   // the HTTP listener, host:port (MAILROOM_HTTP_ADDR)
	Env  []string // the whole environment each run gets
	Logs *Logs    // standard error of every run
	Cmd  *exec.Cmd
}

// Start builds the binary and starts a node on a new database (testdb.URL),
// HTTP on a free loopback port, inbound SMTP off, a test secret key, the
// service domain mailroom.test and warn-level logs, then waits until it
// answers. extra entries ("NAME=value") add to or override those.
func Start(t testing.TB, extra ...string) *Node {
	t.Helper()
	n := &Node{t: t, Bin: Build(t), Addr: FreeAddr(t), Logs: &Logs{}}
	n.Env = append(os.Environ(),
		"MAILROOM_DATABASE_URL="+testdb.URL(t),
		"MAILROOM_HTTP_ADDR="+n.Addr,
		"MAILROOM_SMTP_ADDR=off",
		"MAILROOM_SECRET_KEY=test-secret-key-0123456789",
		"MAILROOM_SERVICE_DOMAIN=mailroom.test",
		"MAILROOM_DATA_DIR="+t.TempDir(),
		"MAILROOM_RATE_LIMIT=100000",
		"MAILROOM_LOG_LEVEL=warn",
	)
	n.Env = append(n.Env, extra...) // exec keeps the last of a repeated name
	n.Addr = n.Getenv("MAILROOM_HTTP_ADDR")
	n.Restart()
	return n
}

// Getenv is the value name has in the node's environment.
func (n *Node) Getenv(name string) string {
	for i := len(n.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(n.Env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// Restart starts `mailroom serve` again (or the first time) and waits until
// it answers.
func (n *Node) Restart() {
	n.t.Helper()
	n.Cmd = Serve(n.t, n.Bin, n.Env, n.Logs)
	WaitHealthy(n.t, n.Addr, 30*time.Second, n.Logs)
}

// Kill ends the running process with SIGKILL and waits for it.
func (n *Node) Kill() {
	n.t.Helper()
	if err := n.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		n.t.Fatal(err)
	}
	n.Cmd.Wait()
}

// Stop ends the running process with SIGTERM and waits for it to drain.
func (n *Node) Stop() {
	n.Cmd.Process.Signal(syscall.SIGTERM)
	n.Cmd.Wait()
}

// Workspace creates a workspace with `mailroom workspace create` and
// returns its API key.
func (n *Node) Workspace(name, owner string) string {
	n.t.Helper()
	create := exec.Command(n.Bin, "workspace", "create", "--name", name, "--owner-email", owner)
	create.Env = n.Env
	out, err := create.Output()
	if err != nil {
		n.t.Fatalf("workspace create: %v", err)
	}
	var ws struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(out, &ws); err != nil {
		n.t.Fatalf("workspace create printed %q: %v", out, err)
	}
	return ws.APIKey
}

// Call sends a JSON request with key and returns the decoded answer,
// failing the test on a status of 300 or more.
func (n *Node) Call(key, method, path string, body any) map[string]any {
	n.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			n.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+n.Addr+path, rd)
	if err != nil {
		n.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if resp.StatusCode >= 300 {
		n.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return m
}

// Logs collects a process's standard error; safe to read while it runs.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
