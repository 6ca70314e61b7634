-- +goose Up
-- SQLite's 00011 rebuilds its events table without the UNIQUE on id and
-- without AUTOINCREMENT. PostgreSQL has nothing to do: 00010 dropped its
-- index on id, and a BIGSERIAL costs no extra write. The version keeps the
-- two dialects' migrations in step.
SELECT 1;

-- +goose Down
SELECT 1;
