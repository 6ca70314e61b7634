package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"mailroom/internal/app"
	"mailroom/internal/clock"
	"mailroom/internal/config"
	"mailroom/internal/policy"
	"mailroom/internal/store"
	"mailroom/internal/workspaces"
)

// policyUsage lists the operator's policy commands (docs/decisions.md,
// "Sending policy"). Each works while serve runs on the same database:
// every node reads the change within policy.HoldsPoll.
const policyUsage = `  mailroom workspace resume --id WS       release a paused workspace (workspace.resumed)
  mailroom workspace pause --id WS [--reason TEXT]
  mailroom workspace block-domain --id WS --domain DOMAIN     refuse recipients at DOMAIN (recipient_blocked_by_policy)
  mailroom workspace unblock-domain --id WS --domain DOMAIN
  mailroom address set --workspace WS --address ADDRESS --state active|paused|receive_only
`

// workspacePolicyCommands are the workspace subcommands policyCommand runs.
var workspacePolicyCommands = map[string]bool{"resume": true, "pause": true, "block-domain": true, "unblock-domain": true}

// policyCommand runs `workspace resume|pause|block-domain|unblock-domain`
// and `address set` (cmd is "workspace resume", "address set", ...).
func policyCommand(ctx context.Context, cfg *config.Config, cmd string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("id", "", "workspace id")
	wsFlag := fs.String("workspace", "", "workspace id (address set)")
	reason := fs.String("reason", "paused by the operator", "why (workspace pause)")
	domain := fs.String("domain", "", "recipient domain (block-domain, unblock-domain)")
	address := fs.String("address", "", "sending address (address set)")
	state := fs.String("state", "", "active, paused or receive_only (address set)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	ws := *id
	if cmd == "address set" {
		ws = *wsFlag
	}
	ws = strings.TrimSpace(ws)
	if ws == "" {
		return usageError{cmd + " needs the workspace id (--id, or --workspace for address set)"}
	}
	db, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := workspaces.New(db, clock.Real{}).Workspace(ctx, ws); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no workspace %q", ws)
		}
		return err
	}
	p := policy.New(policy.Config{DB: db, Settings: cfg.Policy})
	out := map[string]any{"workspace_id": ws}
	switch cmd {
	case "workspace resume":
		changed, err := p.Resume(ctx, ws)
		if err != nil {
			return err
		}
		out["paused"], out["resumed"] = false, changed
	case "workspace pause":
		changed, err := p.Pause(ctx, ws, *reason, nil)
		if err != nil {
			return err
		}
		out["paused"], out["changed"] = true, changed
	case "workspace block-domain", "workspace unblock-domain":
		if *domain == "" {
			return usageError{cmd + " needs --domain"}
		}
		block := cmd == "workspace block-domain"
		if err := p.BlockDomain(ctx, ws, *domain, block); err != nil {
			return err
		}
		out["domain"], out["blocked"] = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(*domain), "@")), block
	case "address set":
		if *address == "" || *state == "" {
			return usageError{"address set needs --address and --state"}
		}
		if err := p.SetAddressState(ctx, ws, *address, *state); err != nil {
			return err
		}
		out["address"], out["state"] = strings.ToLower(strings.TrimSpace(*address)), *state
	default:
		return usageError{"unknown command " + cmd}
	}
	return json.NewEncoder(stdout).Encode(out)
}
