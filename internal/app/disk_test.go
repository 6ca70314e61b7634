package app_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mailroom/internal/app"
	"mailroom/internal/config"
)

// A node that cannot open its SQLite database while its disk is below
// MAILROOM_MIN_FREE_DISK says so, naming the disk and the setting, rather
// than only SQLite's own words ("disk I/O error (4874)" on a full tmpfs).
func TestStartOnAFullDiskNamesTheCause(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mailroom.db")
	if err := os.Mkdir(path, 0o700); err != nil { // a directory: SQLite cannot open it
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Map(map[string]string{"MAILROOM_DATABASE_URL": path, "MAILROOM_DATA_DIR": dir,
		"MAILROOM_SECRET_KEY": "test-secret-key-0123456789", "MAILROOM_MIN_FREE_DISK": "100000TB"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "the disk holding "+dir+" has ") || !strings.Contains(err.Error(), "MAILROOM_MIN_FREE_DISK is 100000TB") {
		t.Fatalf("start: %v", err)
	}
}
