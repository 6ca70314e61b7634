package store

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrLocked is returned by LockSQLite when another process serves the
// database.
var ErrLocked = errors.New("database is served by another process")

// Lock is a held lock on a SQLite database file; see LockSQLite.
type Lock struct {
	f    *os.File
	path string
}

// LockSQLite takes the operating system's exclusive lock on a file beside
// the SQLite database at url (its path plus ".lock"), so that one process
// alone runs workers on it: at start the owner knows that every job left
// running, and every webhook lease, belongs to a process that died. The
// kernel drops the lock when the process dies however it dies, so a crash
// never leaves a stale lock behind. Commands that only read or insert
// (migrate, workspace create) take no lock and work while serve runs.
func LockSQLite(url string) (*Lock, error) {
	path := SQLitePath(url) + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %s: %w", path, err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if !errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (process %d)", pid)
			}
		}
		return nil, fmt.Errorf("%w%s: another `mailroom serve` holds %s; stop it first or point MAILROOM_DATABASE_URL at another file (several nodes on one database need PostgreSQL)", ErrLocked, holder, path)
	}
	// The holder's pid, for the message above (informative only).
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f, path: path}, nil
}

// Release gives the lock up; a second call does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor drops the lock
	l.f = nil
	return err
}

// SQLitePath is the file path a SQLite database URL names (as Open reads it).
func SQLitePath(url string) string {
	path := strings.TrimPrefix(url, "sqlite://")
	path = strings.TrimPrefix(path, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path
}
