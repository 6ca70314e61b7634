-- +goose Up
-- Contact imports (the Resend SDKs' contacts.imports): one row per CSV
-- import with its counts, so an import has an id GET can read. An import
-- runs whole in its request, so a row is written completed; audience_id is
-- '' for an import of contacts alone.
CREATE TABLE contact_imports (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    audience_id  TEXT NOT NULL,
    status       TEXT NOT NULL,
    total        INTEGER NOT NULL,
    created      INTEGER NOT NULL,
    updated      INTEGER NOT NULL,
    skipped      INTEGER NOT NULL,
    failed       INTEGER NOT NULL,
    created_at   BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX contact_imports_workspace ON contact_imports (workspace_id, created_at);

-- +goose Down
DROP TABLE contact_imports;
