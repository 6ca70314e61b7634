-- +goose Up
-- Retention finds old attempts by the email id, which begins with its
-- creation time (delivery.PurgeAttempts): the index on created_at is not
-- needed. (SQLite also drops the rowid copy of the key, see its 00120.)
DROP INDEX email_attempts_created;

-- +goose Down
CREATE INDEX email_attempts_created ON email_attempts (created_at);
