package store_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mailroom/internal/store"
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
