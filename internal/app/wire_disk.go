package app

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"mailroom/internal/config"
	"mailroom/internal/diskguard"
	"mailroom/internal/store"
)

// newDiskGuard watches the disk holding the SQLite database (nil on
// PostgreSQL, whose disk_full errors answer 507 through store.IsDiskFull).
// Built before the database opens, so a start on a full disk says so.
func newDiskGuard(cfg *config.Config, log *slog.Logger) *diskguard.Guard {
	if cfg.IsPostgres() {
		return nil
	}
	f := cfg.Limits.MinFreeDisk
	g := diskguard.New(diskguard.Options{Dir: filepath.Dir(store.SQLitePath(cfg.DatabaseURL)), Setting: f.Text,
		Threshold: diskguard.Threshold{Bytes: f.Bytes, Percent: f.Percent}, Log: log.With("component", "diskguard")})
	if g.Full() {
		log.Error("starting on a nearly full disk: new work is refused until space is freed", "cause", g.Cause())
	}
	return g
}

// openError names the full disk behind a database that would not open,
// where SQLite alone says "disk I/O error (4874)".
func openError(g *diskguard.Guard, err error) error {
	switch {
	case g != nil && (g.Full() || store.IsDiskFull(err)):
		return fmt.Errorf("%s: %w", g.Cause(), err)
	case store.IsDiskFull(err):
		return fmt.Errorf("the database is out of disk space: %w", err)
	}
	return err
}

// errDatabaseUnreachable is /readyz's reason when the database does not
// answer: the driver's own error names the database's user, name and host,
// and /readyz is unauthenticated (the log keeps the detail).
var errDatabaseUnreachable = errors.New("database unreachable")
