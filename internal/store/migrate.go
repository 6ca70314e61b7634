package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrations are numbered alike for both dialects. A migration whose SQL
// both accept lives once in migrations/common; one that must differ has a
// file of the same name in migrations/sqlite and migrations/postgres, which
// stands in for (never beside) a common one.
//
//go:embed migrations
var migrations embed.FS

// Migrations is the dialect's migrations as goose reads them: the common
// ones with the dialect's files standing in for those of the same name.
func Migrations(d Dialect) (fs.FS, error) {
	common, err := fs.Sub(migrations, "migrations/common")
	if err != nil {
		return nil, err
	}
	own, err := fs.Sub(migrations, "migrations/"+d.String())
	if err != nil {
		return nil, err
	}
	return overlayFS{base: common, over: own}, nil
}

// overlayFS is the flat directory base with each file of over standing in
// for base's file of the same name. goose lists it through ReadDir.
type overlayFS struct{ base, over fs.FS }

func (o overlayFS) Open(name string) (fs.File, error) {
	if name != "." && !strings.Contains(name, "/") {
		if f, err := o.over.Open(name); err == nil {
			return f, nil
		}
	}
	return o.base.Open(name)
}

func (o overlayFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	over, err := fs.ReadDir(o.over, ".")
	if err != nil {
		return nil, err
	}
	base, err := fs.ReadDir(o.base, ".")
	if err != nil {
		return nil, err
	}
	entries := slices.Clone(over)
	for _, e := range base {
		if !slices.ContainsFunc(over, func(x fs.DirEntry) bool { return x.Name() == e.Name() }) {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// Migrate applies every embedded migration for the dialect. Safe to run from
// several processes: PostgreSQL takes an advisory lock, SQLite's single
// writer serialises.
func (db *DB) Migrate(ctx context.Context) error { return db.MigrateTo(ctx, 0) }

// MigrateTo applies the embedded migrations up to version (every one when
// version is 0): a test of a migration's data changes starts below it.
func (db *DB) MigrateTo(ctx context.Context, version int64) error {
	sub, err := Migrations(db.Dialect)
	if err != nil {
		return err
	}
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if db.Dialect == Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	// Branches developed side by side pick their numbers apart, so a release
	// can bring a migration numbered below one a database already has: goose
	// applies it instead of refusing to start (each migration stands alone).
	opts = append(opts, goose.WithAllowOutofOrder(true))
	p, err := goose.NewProvider(dialect, db.W, sub, opts...)
	if err != nil {
		return fmt.Errorf("loading migrations: %w", err)
	}
	if version > 0 {
		_, err = p.UpTo(ctx, version)
	} else {
		_, err = p.Up(ctx)
	}
	if err != nil {
		return fmt.Errorf("migrating database: %w", err)
	}
	return db.durable()
}
