package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
)

// readmeBlocks returns the ```sh blocks of README.md under the level-2
// headings for which keep says yes, in order.
func readmeBlocks(t *testing.T, keep func(heading string) bool) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	heading, in := "", false
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case in && line == "```":
			in = false
			if keep(heading) {
				out = append(out, cur.String())
			}
			cur.Reset()
		case in:
			cur.WriteString(line + "\n")
		case line == "```sh":
			in = true
		case strings.HasPrefix(line, "## "):
			heading = strings.TrimPrefix(line, "## ")
		}
	}
	return out
}

// TestReadmeQuickstarts runs the README as a newcomer pastes it: the
// serve command of "Run it" in the background, then every shell block of
// the three quickstarts, in order, in one shell, with the built binary as
// ./mailroom. Only the ports differ (free ones instead of 8080 and 2525).
func TestReadmeQuickstarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Getenv("MAILROOM_TEST_DATABASE_URL") != "" {
		t.Skip("the quickstarts run on the embedded SQLite default")
	}
	for _, tool := range []string{"bash", "curl", "jq", "swaks"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the quickstarts need %s (.ci/run installs it)", tool)
		}
	}
	bin := binary.Build(t)
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "mailroom")); err != nil {
		t.Fatal(err)
	}
	http, smtp := binary.FreeAddr(t), binary.FreeAddr(t)
	_, smtpPort, _ := strings.Cut(smtp, ":")
	_, httpPort, _ := strings.Cut(http, ":")
	ports := strings.NewReplacer("localhost:8080", "localhost:"+httpPort, ":2525", ":"+smtpPort)

	run := readmeBlocks(t, func(h string) bool { return h == "Run it" })
	if len(run) != 1 {
		t.Fatalf("Run it has %d shell blocks", len(run))
	}
	serve := regexp.MustCompile(`&& (.*\./mailroom serve)\s*$`).FindStringSubmatch(strings.TrimSpace(run[0]))
	if serve == nil {
		t.Fatalf("no serve command in %q", run[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var logs bytes.Buffer
	server := exec.CommandContext(ctx, "bash", "-c", "exec env "+ports.Replace(serve[1]))
	server.Dir, server.Stderr = dir, &logs
	server.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "MAILROOM_") }),
		"MAILROOM_HTTP_ADDR="+http, "MAILROOM_SMTP_ADDR="+smtp)
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()
	binary.WaitHealthy(t, http, 15*time.Second, &logs)

	quick := readmeBlocks(t, func(h string) bool { return strings.HasPrefix(h, "Quickstart") })
	if len(quick) < 4 {
		t.Fatalf("only %d quickstart blocks", len(quick))
	}
	script := "set -euo pipefail\n" + ports.Replace(strings.Join(quick, ""))
	sh := exec.CommandContext(ctx, "bash", "-c", script)
	sh.Dir, sh.Env = dir, server.Env
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the quickstarts failed: %v\n%s\nserver log:\n%s", err, out, logs.String())
	}
	for _, want := range []string{
		`{"status":"delivered","events":["email.accepted","email.sent","email.delivered"]}`,
		"Hello Ann", "Hello Bob",
		"ann@example.com: Question about my order",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the quickstarts' output lacks %q:\n%s", want, out)
		}
	}
}

// TestReadmeNamesEveryCommandAndSetting: every command `mailroom --help`
// lists is in the README, and every MAILROOM_* variable the configuration
// reads is in its table.
func TestReadmeNamesEveryCommandAndSetting(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(usage, "\n") {
		// A usage line is "  mailroom CMD [ARGS]   description".
		f := strings.Fields(regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), 2)[0])
		if len(f) < 2 || f[0] != "mailroom" {
			continue
		}
		cmd := []string{"mailroom"}
		for _, w := range f[1:] {
			if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") || strings.ToUpper(w) == w {
				break
			}
			cmd = append(cmd, w)
		}
		if !bytes.Contains(readme, []byte("`"+strings.Join(cmd, " "))) {
			t.Errorf("README.md does not show the command %q", strings.Join(cmd, " "))
		}
	}
	name := regexp.MustCompile(`"(MAILROOM_[A-Z0-9_]+)"`)
	seen := map[string]bool{}
	for _, dir := range []string{"../../internal/config", "."} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, _ := os.ReadFile(f)
			for _, m := range name.FindAllSubmatch(src, -1) {
				v := string(m[1])
				if seen[v] || strings.HasPrefix(v, "MAILROOM_TEST_") {
					continue
				}
				seen[v] = true
				if !bytes.Contains(readme, []byte("`"+v+"`")) {
					t.Errorf("README.md's configuration table does not name %s", v)
				}
			}
		}
	}
	if len(seen) < 40 {
		t.Fatalf("found only %d settings: is the scan looking in the right place?", len(seen))
	}
}
