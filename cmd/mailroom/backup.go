package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"mailroom/internal/config"
	"mailroom/internal/store"
)

const backupUsage = `  mailroom backup --to FILE           online snapshot of a running SQLite node (and FILE.key, its secret key)
  mailroom restore --from FILE --to DIR   a new data directory from a backup (mailroom.db, secret.key)
  mailroom healthcheck [--ready]      exit 0 when this node's /healthz (or /readyz) answers 200
`

// backup is `mailroom backup --to FILE`: a consistent snapshot of the
// SQLite database while the node runs (store.BackupSQLite), and the
// generated secret key beside it as FILE.key, without which sealed secrets
// (webhook signing secrets, DKIM keys) cannot be read back.
func backup(ctx context.Context, cfg *config.Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	to := fs.String("to", "", "the backup file to write (must not exist)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *to == "" {
		return usageError{"backup needs --to FILE"}
	}
	if cfg.IsPostgres() {
		return errors.New("mailroom backup snapshots SQLite; on PostgreSQL use pg_dump or continuous archiving (PITR) and keep MAILROOM_SECRET_KEY with the dump (docs/operations.md)")
	}
	out := map[string]any{"backup": *to}
	if cfg.SecretKey != "" {
		// The key comes from the environment: it is the operator's to keep.
		out["secret_key"] = "MAILROOM_SECRET_KEY (from the environment, not written: keep it with the backup)"
	} else {
		keyPath := filepath.Join(cfg.DataDir, "secret.key")
		if err := store.CopyFile(keyPath, *to+".key", 0o600); err != nil {
			return fmt.Errorf("copying the secret key %s: %w", keyPath, err)
		}
		out["secret_key"] = *to + ".key"
	}
	n, err := store.BackupSQLite(ctx, cfg.DatabaseURL, *to)
	if err != nil {
		if cfg.SecretKey == "" {
			_ = os.Remove(*to + ".key")
		}
		return err
	}
	out["bytes"] = n
	return json.NewEncoder(stdout).Encode(out)
}

// restore is `mailroom restore --from FILE --to DIR`: DIR/mailroom.db from
// the backup and DIR/secret.key from FILE.key when there is one. It never
// writes over an existing database.
func restore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the backup file (mailroom backup --to)")
	dir := fs.String("to", "", "a new data directory")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *from == "" || *dir == "" {
		return usageError{"restore needs --from FILE and --to DIR"}
	}
	db := filepath.Join(*dir, "mailroom.db")
	if err := store.RestoreSQLite(ctx, *from, db); err != nil {
		return err
	}
	out := map[string]any{"database": db}
	if _, err := os.Stat(*from + ".key"); err == nil {
		key := filepath.Join(*dir, "secret.key")
		if err := store.CopyFile(*from+".key", key, 0o600); err != nil {
			return fmt.Errorf("restoring the secret key: %w", err)
		}
		out["secret_key"] = key
	} else {
		out["secret_key"] = "none beside the backup: start with the MAILROOM_SECRET_KEY the node had"
	}
	out["serve"] = "MAILROOM_DATABASE_URL=" + db + " mailroom serve"
	return json.NewEncoder(stdout).Encode(out)
}
