-- +goose Up
-- SQLite's 00124 narrows events_email to (email_id), its rowid (seq)
-- ending every entry. A PostgreSQL index holds no rowid: (email_id, seq)
-- stays. The version keeps the two dialects' migrations in step.
SELECT 1;

-- +goose Down
SELECT 1;
