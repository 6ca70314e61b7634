-- +goose Up
-- One index serves both email listings: the workspace's (newest first) and
-- a mail:send key's own, which scans the same range and filters on the
-- api_key_id the index carries (SQLite reads no table row for the entries
-- it skips).
-- The second index cost every send a b-tree insert and the group commit a
-- page write, an eighth of its time; what it saved was a scan, for a key
-- that sent few of a large workspace's emails, of the entries newer than
-- its page.
DROP INDEX emails_workspace_key_created;
DROP INDEX emails_workspace_created;
CREATE INDEX emails_workspace_created ON emails (workspace_id, created_at, id, api_key_id);

-- +goose Down
DROP INDEX emails_workspace_created;
CREATE INDEX emails_workspace_created ON emails (workspace_id, created_at, id);
CREATE INDEX emails_workspace_key_created ON emails (workspace_id, api_key_id, created_at, id);
