package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mailroom/internal/app"
	"mailroom/internal/clock"
	"mailroom/internal/config"
	"mailroom/internal/dashboard"
	"mailroom/internal/store"
	"mailroom/internal/workspaces"
)

const devUsage = `  mailroom dev                        a node for a laptop: serve with every outbound email captured, none sent
                                      (docs/dev.md); prints an API key and a dashboard sign-in link
`

// devDefaults are the settings `mailroom dev` gives serve where the
// environment sets none (docs/dev.md); MAILROOM_OUTBOUND=capture is
// always set. `mailroom serve` with the same settings but a real
// MAILROOM_OUTBOUND (and service domain) is the production node.
var devDefaults = []struct{ name, value string }{
	{"MAILROOM_SERVICE_DOMAIN", "mailroom.localhost"}, // serve's default: addresses there are valid (a bare "local" has no dot)
	{"MAILROOM_WEBHOOK_ALLOW_PRIVATE", "true"},        // webhooks to localhost
	{"MAILROOM_LOG_FORMAT", "text"},
}

// devWorkspaceFile, in the data directory, names the workspace `mailroom
// dev` made, so a restart keeps the app's data and earlier keys.
const devWorkspaceFile = "dev-workspace"

// devEnv wraps lookupEnv with dev's settings: capture always, the
// defaults where unset, and a public URL on the HTTP listener's port.
func devEnv(lookupEnv func(string) (string, bool)) func(string) (string, bool) {
	set := map[string]string{"MAILROOM_OUTBOUND": config.OutboundCapture}
	for _, d := range devDefaults {
		if v, ok := lookupEnv(d.name); !ok || v == "" {
			set[d.name] = d.value
		}
	}
	if v, ok := lookupEnv("MAILROOM_PUBLIC_URL"); !ok || v == "" {
		addr, ok := lookupEnv("MAILROOM_HTTP_ADDR")
		if !ok || addr == "" {
			addr = config.DefaultHTTPAddr
		}
		if u, err := localURL(addr); err == nil {
			set["MAILROOM_PUBLIC_URL"] = strings.Replace(u, "127.0.0.1", "localhost", 1)
		}
	}
	return func(k string) (string, bool) {
		if v, ok := set[k]; ok {
			return v, true
		}
		return lookupEnv(k)
	}
}

// dev is `mailroom dev`: serve, with outbound mail captured, after
// printing how to reach the node.
func dev(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return usageError{"dev takes no arguments; configure it as serve, with MAILROOM_* variables"}
	}
	if v, ok := lookupEnv("MAILROOM_OUTBOUND"); ok && v != "" && v != config.OutboundCapture {
		fmt.Fprintf(stderr, "mailroom dev: MAILROOM_OUTBOUND=%s is ignored: dev captures every email (use serve to send)\n", v)
	}
	cfg, err := config.Load(devEnv(lookupEnv))
	if err != nil {
		return err
	}
	logger := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	return serveWith(ctx, cfg, logger, func(a *app.App) error { return devGreeting(ctx, a, stdout) })
}

// devGreeting finds or makes the dev workspace, mints a key for this run
// and prints it with a sign-in link and the settings in force.
func devGreeting(ctx context.Context, a *app.App, w io.Writer) error {
	cfg := a.Config
	wsID, key, err := devWorkspace(ctx, a)
	if err != nil {
		return err
	}
	link, _, err := dashboard.CreateLink(ctx, dashboard.Deps{DB: a.DB, Clock: clock.Real{}, PublicURL: cfg.PublicURL, Workspaces: a.Workspaces}, wsID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, `
Mailroom dev: every email is captured here, none leaves this machine.

  API        %s/v1
  API key    %s
  Dashboard  %s
             (one-time sign-in link, 15 minutes; `+"`mailroom dashboard link --workspace %s`"+` makes another)
  Captured   GET /v1/captured-emails, or Captured in the dashboard
  Data       %s

Settings: MAILROOM_OUTBOUND=capture MAILROOM_SERVICE_DOMAIN=%s MAILROOM_WEBHOOK_ALLOW_PRIVATE=%t
MAILROOM_PUBLIC_URL=%s. In production run `+"`mailroom serve`"+` with MAILROOM_OUTBOUND=mx (or a
smarthost) and your own service domain and public URL; the app's code and SDK stay as they are.

`, cfg.PublicURL, key, link, wsID, absPath(cfg.DataDir), cfg.ServiceDomain, cfg.WebhookAllowPrivate, cfg.PublicURL)
	return nil
}

// devWorkspace returns the dev workspace (made on the first run) and a
// new key for it.
func devWorkspace(ctx context.Context, a *app.App) (string, string, error) {
	path := filepath.Join(a.Config.DataDir, devWorkspaceFile)
	if b, err := os.ReadFile(path); err == nil {
		id := strings.TrimSpace(string(b))
		if _, err := a.Workspaces.Workspace(ctx, id); err == nil {
			_, key, err := a.Workspaces.CreateKey(ctx, nil, id, "mailroom dev "+time.Now().UTC().Format(time.RFC3339), nil, false, workspaces.KeyMailbox{})
			return id, key, err
		} else if !errors.Is(err, store.ErrNotFound) {
			return "", "", err
		}
	}
	w, key, err := a.Workspaces.CreateWorkspace(ctx, "Development", "dev@"+a.Config.ServiceDomain, true)
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(path, []byte(w.ID+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return w.ID, key, nil
}

// absPath is p made absolute for the greeting, p itself when it cannot be.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
