package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// BackupSQLite writes a consistent snapshot of the SQLite database at url
// to the file to, while the node keeps running: VACUUM INTO copies what
// one read transaction sees (every commit before it began, WAL included)
// without blocking the writer. The copy goes to a temporary file, is
// checked, flushed and then renamed, so to exists only when it is
// complete. It returns the copy's size.
func BackupSQLite(ctx context.Context, url, to string) (int64, error) {
	path := SQLitePath(url)
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("no SQLite database at %s: %w", path, err)
	}
	if _, err := os.Stat(to); err == nil {
		return 0, fmt.Errorf("%s exists: a backup never overwrites a file", to)
	}
	tmp := to + ".partial"
	_ = os.Remove(tmp)
	src, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("snapshot of %s: %w", path, err)
	}
	if err := checkSQLite(ctx, tmp); err != nil {
		_ = os.Remove(tmp)
		return 0, err
	}
	if err := syncFile(tmp); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, to); err != nil {
		return 0, err
	}
	st, err := os.Stat(to)
	if err != nil {
		return 0, err
	}
	return st.Size(), syncDir(filepath.Dir(to))
}

// RestoreSQLite copies the backup from into a new database file at to
// (never over an existing one), checked and flushed before it is named.
func RestoreSQLite(ctx context.Context, from, to string) error {
	if _, err := os.Stat(to); err == nil {
		return fmt.Errorf("%s exists: restore into a new directory", to)
	}
	for _, side := range []string{"-wal", "-shm", "-keys"} {
		if _, err := os.Stat(to + side); err == nil {
			return fmt.Errorf("%s exists: restore into a new directory", to+side)
		}
	}
	if err := checkSQLite(ctx, from); err != nil {
		return fmt.Errorf("%s is not a usable backup: %w", from, err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	tmp := to + ".partial"
	if err := CopyFile(from, tmp, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, to); err != nil {
		return err
	}
	return syncDir(filepath.Dir(to))
}

// checkSQLite runs SQLite's quick_check on the file at path.
func checkSQLite(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res); err != nil {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	if res != "ok" {
		return fmt.Errorf("checking %s: %s", path, res)
	}
	return nil
}

// CopyFile copies from to a new file to with mode perm and flushes it.
func CopyFile(from, to string, perm os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		_ = os.Remove(to)
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
