package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/testapp"
)

// TestMCPBinaryOverStdio runs the built `mailroom mcp` as an MCP client
// would (the go-sdk's CommandTransport): its tools reach the node named by
// --url with the key in MAILROOM_API_KEY, and stdout carries only the protocol.
func TestMCPBinaryOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary.Build(t)
	a := testapp.Start(t)
	if r := a.Do("POST", "/v1/suppressions", map[string]any{"email": "gone@example.net"}); r.Status != 201 {
		t.Fatalf("suppress: %d %s", r.Status, r.Body)
	}
	cmd := exec.Command(bin, "mcp", "--url", a.URL)
	cmd.Env = []string{"MAILROOM_API_KEY=" + a.Key}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr %q", err, stderr.String())
	}
	if info := cs.InitializeResult().ServerInfo; info.Name != "mailroom" {
		t.Fatalf("server %+v", info)
	}
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 10 {
		t.Fatalf("%d tools, want 10", n)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_suppressions", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "gone@example.net") {
		t.Fatalf("list_suppressions: %v %+v", err, res)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("mailroom mcp exited %d once its stdin closed; stderr %q", code, stderr.String())
	}
}

// TestMCPNeedsAKey: without a key there is nothing to serve; that is a
// usage error, found before anything is read from stdin.
func TestMCPNeedsAKey(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{{"mcp"}, {"mcp", "--url", "http://127.0.0.1:1", "extra"}, {"mcp", "--api-key", "k", "--url", "ftp://x"}} {
		err := run(context.Background(), append([]string{"mailroom"}, args...), env(map[string]string{}), &out, &errOut)
		var u usageError
		if !errors.As(err, &u) {
			t.Fatalf("%v: %v, want a usage error", args, err)
		}
	}
	if out.Len() != 0 {
		t.Fatalf("stdout is the protocol's: %q", out.String())
	}
}
