// Package binary builds the real mailroom binary for tests that must run it
// as a separate process (SIGTERM and SIGKILL tests), once per test binary.
package binary

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
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
