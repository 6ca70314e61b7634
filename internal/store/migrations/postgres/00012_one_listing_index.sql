-- +goose Up
-- One index serves both email listings (see SQLite's 00012): a mail:send
-- key's own scans the workspace's range and filters on the api_key_id the
-- index carries.
DROP INDEX emails_workspace_key_created;
DROP INDEX emails_workspace_created;
CREATE INDEX emails_workspace_created ON emails (workspace_id, created_at, id) INCLUDE (api_key_id);

-- +goose Down
DROP INDEX emails_workspace_created;
CREATE INDEX emails_workspace_created ON emails (workspace_id, created_at, id);
CREATE INDEX emails_workspace_key_created ON emails (workspace_id, api_key_id, created_at, id);
