-- +goose Up
-- An attempt's workspace is its email's (delivery's Attempts reads it
-- there), and retention finds old attempts by the email id, which begins
-- with its creation time (delivery.PurgeAttempts): neither workspace_id nor
-- the index on created_at is needed (issue #47). SQLite also drops the rowid
-- copy of the key, see its 00120.
ALTER TABLE email_attempts DROP COLUMN workspace_id;
DROP INDEX email_attempts_created;

-- +goose Down
ALTER TABLE email_attempts ADD COLUMN workspace_id TEXT NOT NULL DEFAULT '';
UPDATE email_attempts a SET workspace_id = e.workspace_id FROM emails e WHERE e.id = a.email_id;
CREATE INDEX email_attempts_created ON email_attempts (created_at);
