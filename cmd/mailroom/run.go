package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"mailroom/internal/app"
	"mailroom/internal/clock"
	"mailroom/internal/config"
	"mailroom/internal/dashboard"
	"mailroom/internal/libcrypto"
	"mailroom/internal/sending"
	"mailroom/internal/suppressions"
	"mailroom/internal/tracing"
	"mailroom/internal/version"
	"mailroom/internal/workspaces"
)

const usage = `usage:
  mailroom serve                      run the API, inbound SMTP and workers
` + devUsage + `  mailroom migrate                    apply database migrations and exit
  mailroom workspace create --name NAME --owner-email EMAIL [--require-owner-confirmation]
  mailroom suppression add-global --email EMAIL [--reason REASON]
  mailroom dashboard link --workspace ID   print a one-time dashboard sign-in link (15 minutes)
` + listenUsage + policyUsage + backupUsage + mcpUsage + `  mailroom version                    print the version, commit, build time, Go version and DKIM signer (so does --version)
  mailroom help                       print this text (so do -h and --help, after any command)

Configuration comes from MAILROOM_* environment variables; see README.md.
`

// usageError is a command line Mailroom does not understand; main exits 2
// for it, as flag and most Unix tools do, and 1 for every other failure.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitCode is the process status for run's result.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// wantsHelp reports whether any argument asks for help, so that
// `mailroom serve --help` prints usage instead of starting a server.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	// Help comes before the configuration is read: it must work even where
	// the environment is wrong, and must never start anything.
	if args[1] == "help" || wantsHelp(args[1:]) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if args[1] == "version" || args[1] == "--version" || args[1] == "-version" {
		fmt.Fprintln(stdout, versionLine())
		return nil
	}
	if args[1] == "listen" {
		// A client of a running node: no configuration of its own.
		return listenCommand(ctx, args[2:], lookupEnv, stdout, stderr)
	}
	if args[1] == "restore" {
		// No configuration: it makes a new data directory.
		return restore(ctx, args[2:], stdout, stderr)
	}
	if args[1] == "dev" {
		// serve's configuration, with dev's settings over it.
		return dev(ctx, args[2:], lookupEnv, stdout, stderr)
	}
	if args[1] == "mcp" {
		// No server configuration either: it runs where the agent runs and
		// reaches the node over its HTTP API.
		return mcpServe(ctx, args[2:], lookupEnv, os.Stdin, stdout, stderr)
	}
	switch args[1] {
	case "serve", "migrate", "backup", "healthcheck":
	case "workspace":
		if len(args) < 3 || (args[2] != "create" && !workspacePolicyCommands[args[2]]) {
			fmt.Fprint(stderr, usage)
			return usageError{"unknown workspace command"}
		}
	case "address":
		if len(args) < 3 || args[2] != "set" {
			fmt.Fprint(stderr, usage)
			return usageError{"unknown address command"}
		}
	case "suppression":
		if len(args) < 3 || args[2] != "add-global" {
			fmt.Fprint(stderr, usage)
			return usageError{"unknown suppression command"}
		}
	case "dashboard":
		if len(args) < 3 || args[2] != "link" {
			fmt.Fprint(stderr, usage)
			return usageError{"unknown dashboard command"}
		}
	default:
		fmt.Fprint(stderr, usage)
		return usageError{fmt.Sprintf("unknown command %q", args[1])}
	}
	cfg, err := config.Load(lookupEnv)
	if err != nil {
		return err
	}
	logger := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	switch args[1] {
	case "serve":
		return serve(ctx, cfg, logger)
	case "backup":
		return backup(ctx, cfg, args[2:], stdout, stderr)
	case "healthcheck":
		return healthcheck(ctx, cfg, args[2:], stdout, stderr)
	case "migrate":
		db, err := app.Open(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
		fmt.Fprintln(stdout, `{"migrated": true}`)
		return nil
	case "workspace":
		if args[2] != "create" {
			return policyCommand(ctx, cfg, "workspace "+args[2], args[3:], stdout, stderr)
		}
		return workspaceCreate(ctx, cfg, args[3:], stdout, stderr)
	case "address":
		return policyCommand(ctx, cfg, "address set", args[3:], stdout, stderr)
	case "dashboard":
		return dashboardLink(ctx, cfg, args[3:], stdout, stderr)
	default: // "suppression", checked above
		return suppressionAddGlobal(ctx, cfg, args[3:], stdout, stderr)
	}
}

// versionLine is `mailroom version`: the build, and which DKIM signer a
// node started with the environment's defaults would use.
func versionLine() string {
	libcrypto.Use(true)
	v, _ := libcrypto.Loaded()
	return version.Read().Line(v)
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

func serve(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	return serveWith(ctx, cfg, logger, nil)
}

// serveWith is serve; started, when not nil, runs once the node serves
// (mailroom dev prints how to reach it).
func serveWith(ctx context.Context, cfg *config.Config, logger *slog.Logger, started func(*app.App) error) error {
	slog.SetDefault(logger)
	// One trace per email over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	stopTracing, err := tracing.Setup(ctx, version.Read().Version)
	if err != nil {
		return fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
	defer func() { _ = stopTracing(context.Background()) }()
	if tracing.On() {
		logger.Info("exporting a trace per email over OTLP", "endpoint", cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")))
	}
	a, err := app.New(ctx, cfg, app.Options{Logger: logger})
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		a.Stop(context.Background())
		return err
	}
	if started != nil {
		if err := started(a); err != nil {
			a.Stop(context.Background())
			return err
		}
	}
	<-ctx.Done()
	logger.Info("shutting down: draining requests and jobs")
	sctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := a.Stop(sctx); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	logger.Info("stopped")
	return nil
}

func workspaceCreate(ctx context.Context, cfg *config.Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("workspace create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "workspace name")
	owner := fs.String("owner-email", "", "owner's email address")
	requireConfirm := fs.Bool("require-owner-confirmation", false, "owner must confirm the address before sending")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if strings.TrimSpace(*name) == "" || strings.TrimSpace(*owner) == "" {
		return usageError{"workspace create needs --name and --owner-email"}
	}
	db, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := workspaces.New(db, clock.Real{})
	w, key, err := svc.CreateWorkspace(ctx, *name, *owner, !*requireConfirm)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]string{"workspace_id": w.ID, "api_key": key})
}

func suppressionAddGlobal(ctx context.Context, cfg *config.Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("suppression add-global", flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("email", "", "address to suppress for every workspace")
	reason := fs.String("reason", suppressions.ReasonManual, "bounce, complaint, unsub or manual")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *email == "" {
		return usageError{"suppression add-global needs --email ADDRESS"}
	}
	// The same parsing as the API, so the stored form (punycode domain)
	// matches what the send path looks up.
	addr, err := sending.ParseAddress(*email)
	if err != nil {
		return fmt.Errorf("--email: %w", err)
	}
	*email = addr.Email
	if !suppressions.ValidReason(*reason) {
		return fmt.Errorf("unknown reason %q", *reason)
	}
	db, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	id, stored, err := suppressions.AddGlobal(ctx, db, *email, *reason, time.Now().UTC())
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"id": id, "email": suppressions.Normalize(*email), "reason": stored, "is_global": true})
}

// dashboardLink prints a one-time sign-in link for a workspace's dashboard:
// whoever can run commands on the server can sign in without a key.
func dashboardLink(ctx context.Context, cfg *config.Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dashboard link", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ws := fs.String("workspace", "", "workspace id (ws_...)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if strings.TrimSpace(*ws) == "" {
		return usageError{"dashboard link needs --workspace ID"}
	}
	db, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	link, exp, err := dashboard.CreateLink(ctx, dashboard.Deps{DB: db, Clock: clock.Real{}, PublicURL: cfg.PublicURL,
		Workspaces: workspaces.New(db, clock.Real{})}, *ws)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]string{"url": link, "path": strings.TrimPrefix(link, cfg.PublicURL), "expires_at": exp.UTC().Format(time.RFC3339)})
}
