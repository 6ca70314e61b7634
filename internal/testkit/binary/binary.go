// Package binary builds the real mailroom binary for tests that must run it
// as a separate process (SIGTERM and SIGKILL tests), once per test binary.
package binary

import (
	"fmt"
	"io"
	"math/rand/v2"
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
