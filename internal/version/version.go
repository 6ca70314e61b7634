// Package version says which build of Mailroom is running: the release
// version stamped at link time, and the commit, build time and toolchain
// that the Go linker records in every binary (runtime/debug.ReadBuildInfo).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release, set by the release build with
// -ldflags "-X mailroom/internal/version.Version=v1.2.3"; "devel" otherwise.
var Version = "devel"

// Commit and BuildTime may be stamped the same way, for builds without VCS
// data (GOFLAGS=-buildvcs=false, a source tarball); they win over it.
var Commit, BuildTime string

// Info describes the running binary.
type Info struct {
	Version   string // Version, or "devel"
	Commit    string // the VCS revision, "+dirty" when built from a modified tree; "unknown" without VCS data
	BuildTime string // the commit's time (RFC 3339); "unknown" without VCS data
	GoVersion string
	Cgo       bool // built with cgo: DKIM may sign with the system's libcrypto
}

// Read returns the binary's Info.
func Read() Info {
	in := Info{Version: Version, Commit: "unknown", BuildTime: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.BuildTime = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		case "CGO_ENABLED":
			in.Cgo = s.Value == "1"
		}
	}
	if len(in.Commit) > 12 {
		in.Commit = in.Commit[:12]
	}
	if dirty && in.Commit != "unknown" {
		in.Commit += "+dirty"
	}
	if Commit != "" {
		in.Commit = Commit
	}
	if BuildTime != "" {
		in.BuildTime = BuildTime
	}
	return in
}

// Line is Info as one line, with the signer in use (libcrypto's version, or
// "" for Go's crypto/rsa): what `mailroom version` prints.
func (in Info) Line(libcrypto string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mailroom %s (commit %s, built %s, %s, ", in.Version, in.Commit, in.BuildTime, in.GoVersion)
	switch {
	case libcrypto != "":
		fmt.Fprintf(&b, "cgo, DKIM by libcrypto %s)", libcrypto)
	case in.Cgo:
		b.WriteString("cgo, DKIM by crypto/rsa: libcrypto not found)")
	default:
		b.WriteString("no cgo, DKIM by crypto/rsa)")
	}
	return b.String()
}
