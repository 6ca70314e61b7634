// Package benchnode starts the in-process node a benchmark measures: the
// settings every benchmark shares, the benchmark's own over them, a
// workspace and its API key.
package benchnode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"mailroom/internal/app"
	"mailroom/internal/config"
	"mailroom/internal/workspaces"
)

// Options are what a benchmark changes.
type Options struct {
	// PG is a PostgreSQL URL; empty means SQLite in Dir.
	PG string
	// Dir is the data directory; empty means a new temporary one, removed
	// by Stop.
	Dir string
	// Env is set over the defaults (an empty value unsets one).
	Env map[string]string
	// LogLevel of the node's log on stderr; nil discards it.
	LogLevel *slog.Level
}

// Node is a started node with a workspace.
type Node struct {
	*app.App
	Workspace *workspaces.Workspace
	// Key is the workspace's API key; URL the API's base (http://host:port).
	Key, URL string
	Dir      string
	ownDir   bool
}

// Owner is the workspace owner's address: the sandbox sender reaches it.
const Owner = "owner@bench.test"

// Call makes an API call with the workspace's key and decodes the JSON
// answer; a status of 300 or more is an error that quotes the body.
func (n *Node) Call(method, path string, body any) (map[string]any, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, n.URL+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+n.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if resp.StatusCode >= 300 {
		return m, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return m, nil
}

// Errors is the level that logs only errors.
var Errors = func() *slog.Level { l := slog.LevelError; return &l }()

// Start starts the node and creates the workspace "Bench".
func Start(ctx context.Context, o Options) (*Node, error) {
	n := &Node{Dir: o.Dir}
	if n.Dir == "" {
		dir, err := os.MkdirTemp("", "mailroom-bench")
		if err != nil {
			return nil, err
		}
		n.Dir, n.ownDir = dir, true
	}
	env := map[string]string{
		"MAILROOM_HTTP_ADDR":    "127.0.0.1:0",
		"MAILROOM_SMTP_ADDR":    "off",
		"MAILROOM_DATABASE_URL": filepath.Join(n.Dir, "mailroom.db"),
		"MAILROOM_DATA_DIR":     n.Dir,
		"MAILROOM_SECRET_KEY":   "bench-secret-key-0123456789abcdef",
		"MAILROOM_RATE_LIMIT":   "1000000000",
		// All the load comes from 127.0.0.1, on sessions kept for the run:
		// the per-client caps (issue #38) would refuse the benchmark itself.
		"MAILROOM_SMTP_MAX_SESSIONS_PER_IP": "100000",
		"MAILROOM_SMTP_MAX_COMMANDS":        "1000000000",
		"MAILROOM_SMTP_MAX_SESSION":         "24h",
		"MAILROOM_HTTP_MAX_BODIES":          "100000",
		"MAILROOM_HTTP_MAX_BODIES_PER_IP":   "100000",
		"MAILROOM_LOG_LEVEL":                "error",
	}
	if o.PG != "" {
		env["MAILROOM_DATABASE_URL"] = o.PG
	}
	for k, v := range o.Env {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	cfg, err := config.Load(config.Map(env))
	if err != nil {
		n.removeDir()
		return nil, err
	}
	handler := slog.Handler(slog.NewTextHandler(io.Discard, nil))
	if o.LogLevel != nil {
		handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: *o.LogLevel})
	}
	if n.App, err = app.New(ctx, cfg, app.Options{Logger: slog.New(handler)}); err != nil {
		n.removeDir()
		return nil, err
	}
	if err := n.App.Start(ctx); err != nil {
		n.Stop()
		return nil, err
	}
	if n.Workspace, n.Key, err = n.Workspaces.CreateWorkspace(ctx, "Bench", Owner, true); err != nil {
		n.Stop()
		return nil, err
	}
	n.URL = "http://" + n.HTTPAddr()
	return n, nil
}

// Stop stops the node (waiting up to 30 s for its work) and removes a
// temporary data directory.
func (n *Node) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = n.App.Stop(ctx)
	n.removeDir()
}

func (n *Node) removeDir() {
	if n.ownDir {
		os.RemoveAll(n.Dir)
	}
}
