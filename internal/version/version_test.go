package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	in := Read()
	if in.Version != Version || in.GoVersion != runtime.Version() || in.Commit == "" || in.BuildTime == "" {
		t.Fatalf("Read() = %+v", in)
	}
	for _, c := range []struct {
		lc   string
		cgo  bool
		want string
	}{
		{"OpenSSL 3.0.19", true, "cgo, DKIM by libcrypto OpenSSL 3.0.19)"},
		{"", true, "cgo, DKIM by crypto/rsa: libcrypto not found)"},
		{"", false, "no cgo, DKIM by crypto/rsa)"},
	} {
		in := Info{Version: "v1.2.3", Commit: "abc123", BuildTime: "2026-11-28T00:00:00Z", GoVersion: "go1.26.8", Cgo: c.cgo}
		got := in.Line(c.lc)
		if !strings.HasPrefix(got, "mailroom v1.2.3 (commit abc123, built 2026-11-28T00:00:00Z, go1.26.8, ") || !strings.HasSuffix(got, c.want) {
			t.Errorf("Line(%q) = %q", c.lc, got)
		}
	}
}

func TestStampedWins(t *testing.T) {
	Commit, BuildTime = "deadbeef", "2026-01-02T03:04:05Z"
	defer func() { Commit, BuildTime = "", "" }()
	if in := Read(); in.Commit != "deadbeef" || in.BuildTime != "2026-01-02T03:04:05Z" {
		t.Fatalf("Read() = %+v", in)
	}
}
