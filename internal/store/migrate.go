package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations
var migrations embed.FS

// Migrate applies every embedded migration for the dialect. Safe to run from
// several processes: PostgreSQL takes an advisory lock, SQLite's single
// writer serialises.
func (db *DB) Migrate(ctx context.Context) error { return db.MigrateTo(ctx, 0) }

// MigrateTo applies the embedded migrations up to version (every one when
// version is 0): a test of a migration's data changes starts below it.
func (db *DB) MigrateTo(ctx context.Context, version int64) error {
	sub, err := fs.Sub(migrations, "migrations/"+db.Dialect.String())
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
