package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
)

// brokenEnv would fail config.Load, so a help path that read the
// configuration (the first step of starting a server) returns an error.
var brokenEnv = env(map[string]string{"MAILROOM_RATE_LIMIT": "many"})

func TestHelpPrintsUsageToStdoutWithoutStarting(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"-help"}, {"help"},
		{"serve", "--help"}, {"serve", "-h"},
		{"migrate", "--help"},
		{"workspace", "--help"}, {"workspace", "create", "--help"}, {"workspace", "create", "--name", "A", "-h"},
		{"suppression", "add-global", "--help"},
		{"mcp", "--help"},
		{"listen", "--help"}, {"listen", "--forward-to", "http://localhost:3000/webhooks", "-h"},
		{"dev", "--help"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			done := make(chan error, 1)
			go func() {
				done <- run(context.Background(), append([]string{"mailroom"}, args...), brokenEnv, &out, &errOut)
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("help did not return: it started something")
			}
			if !strings.HasPrefix(out.String(), "usage:\n") || !strings.Contains(out.String(), "mailroom serve") {
				t.Fatalf("stdout is not the usage: %q", out.String())
			}
			if errOut.Len() != 0 {
				t.Fatalf("stderr not empty: %q", errOut.String())
			}
		})
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{}, {"serv"}, {"workspace"}, {"workspace", "delete"}, {"suppression", "add"},
		{"listen"}, {"listen", "--forward-to"}, {"listen", "--forward-to", "http://localhost:3000", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), append([]string{"mailroom"}, args...), brokenEnv, &out, &errOut)
			var u usageError
			if !errors.As(err, &u) || exitCode(err) != 2 {
				t.Fatalf("err = %v (exit %d), want a usage error (exit 2)", err, exitCode(err))
			}
			if out.Len() != 0 || !strings.HasPrefix(errOut.String(), "usage:\n") {
				t.Fatalf("usage must go to stderr only: stdout %q stderr %q", out.String(), errOut.String())
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	if exitCode(nil) != 0 || exitCode(errors.New("database down")) != 1 || exitCode(usageError{"x"}) != 2 {
		t.Fatal("exit codes are 0 for success, 1 for failure, 2 for a usage error")
	}
	// A bad environment on a real command is a failure, not a usage error.
	err := run(context.Background(), []string{"mailroom", "migrate"}, brokenEnv, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("migrate with a broken environment: %v (exit %d), want exit 1", err, exitCode(err))
	}
}

// TestBinaryHelpAndUsageExitCodes checks the process statuses main gives.
func TestBinaryHelpAndUsageExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary.Build(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--help"}, 0},
		{[]string{"serve", "--help"}, 0},
		{[]string{"bogus"}, 2},
		{nil, 2},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = []string{"MAILROOM_RATE_LIMIT=many"}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("mailroom %v did not exit", c.args)
		}
		if got := cmd.ProcessState.ExitCode(); got != c.code {
			t.Fatalf("mailroom %v exited %d, want %d; stderr %q", c.args, got, c.code, errOut.String())
		}
		usageOn := out.String()
		if c.code != 0 {
			usageOn = errOut.String()
		}
		if !strings.HasPrefix(usageOn, "usage:\n") {
			t.Fatalf("mailroom %v: usage not printed where expected: stdout %q stderr %q", c.args, out.String(), errOut.String())
		}
	}
}
