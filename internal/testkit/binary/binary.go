// Package binary builds the real mailroom binary for tests that must run it
// as a separate process (SIGTERM and SIGKILL tests), once per test binary.
package binary

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
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
