package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"mailroom/internal/store"
	"mailroom/internal/testkit/testdb"
)

// No row is store.ErrNotFound, and only that: a caller still checking
// sql.ErrNoRows would never match, so the mapping must be the only one.
func TestRowScanNotFound(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	var id string
	err := db.QueryRow(ctx, `SELECT id FROM workspaces WHERE id = ?`, "ws_none").Scan(&id)
	if !errors.Is(err, store.ErrNotFound) || errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("pool read: got %v, want store.ErrNotFound alone", err)
	}
	err = db.InTx(ctx, func(tx *store.Tx) error {
		return tx.QueryRow(ctx, `SELECT id FROM workspaces WHERE id = ?`, "ws_none").Scan(&id)
	})
	if !errors.Is(err, store.ErrNotFound) || errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("transaction read: got %v, want store.ErrNotFound alone", err)
	}
}

// Outside the store nothing may test for sql.ErrNoRows: Row.Scan never
// returns it, so such a check is dead code hiding a not-found.
func TestNoErrNoRowsOutsideStore(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "testdata" || path == filepath.Join(root, "internal", "store") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "sql."+"ErrNoRows") {
			t.Errorf("%s checks sql.ErrNoRows; check store.ErrNotFound (store.Row.Scan maps no row to it)", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A full disk and an unreachable database are told apart from every other
// failure, in both dialects' words; a closed pool is unreachable.
func TestDiskFullAndUnavailable(t *testing.T) {
	for _, c := range []struct {
		err               error
		full, unavailable bool
	}{
		{errors.New("database or disk is full (13)"), true, false},
		{&pgconn.PgError{Code: "53100", Message: "could not extend file"}, true, false},
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, false, true},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, false, true},
		{&pgconn.PgError{Code: "08006", Message: "connection failure"}, false, true},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key value"}, false, false},
		{errors.New("UNIQUE constraint failed: emails.id"), false, false},
		{driver.ErrBadConn, false, true},
		{nil, false, false},
	} {
		if got := store.IsDiskFull(c.err); got != c.full {
			t.Errorf("IsDiskFull(%v) = %v", c.err, got)
		}
		if got := store.IsUnavailable(c.err); got != c.unavailable {
			t.Errorf("IsUnavailable(%v) = %v", c.err, got)
		}
	}
	db, err := store.Open(context.Background(), testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = db.Exec(context.Background(), `DELETE FROM workspaces`)
	if !store.IsUnavailable(err) {
		t.Errorf("a closed pool: %v, not unavailable", err)
	}
}
