package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"mailroom/internal/app"
	"mailroom/internal/clock"
	"mailroom/internal/config"
	"mailroom/internal/sending"
	"mailroom/internal/suppressions"
	"mailroom/internal/workspaces"
)

const usage = `usage:
  mailroom serve                      run the API, inbound SMTP and workers
  mailroom migrate                    apply database migrations and exit
  mailroom workspace create --name NAME --owner-email EMAIL [--require-owner-confirmation]
  mailroom suppression add-global --email EMAIL [--reason REASON]
`

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cfg, err := config.Load(lookupEnv)
	if err != nil {
		return err
	}
	logger := newLogger(stderr, cfg.LogLevel)
	switch args[1] {
	case "serve":
		return serve(ctx, cfg, logger)
	case "migrate":
		db, err := app.Open(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
		fmt.Fprintln(stdout, `{"migrated": true}`)
		return nil
	case "workspace":
		if len(args) < 3 || args[2] != "create" {
			fmt.Fprint(stderr, usage)
			return errors.New("unknown workspace command")
		}
		return workspaceCreate(ctx, cfg, args[3:], stdout, stderr)
	case "suppression":
		if len(args) < 3 || args[2] != "add-global" {
			fmt.Fprint(stderr, usage)
			return errors.New("unknown suppression command")
		}
		return suppressionAddGlobal(ctx, cfg, args[3:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[1])
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

func serve(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	slog.SetDefault(logger)
	a, err := app.New(ctx, cfg, app.Options{Logger: logger})
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		a.Stop(context.Background())
		return err
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
		return err
	}
	if strings.TrimSpace(*name) == "" || strings.TrimSpace(*owner) == "" {
		return errors.New("workspace create needs --name and --owner-email")
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
		return err
	}
	if *email == "" {
		return errors.New("suppression add-global needs --email ADDRESS")
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
