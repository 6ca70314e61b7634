-- +goose Up
-- A CSV import started from the dashboard (internal/dashboard owns it): the
-- import runs after the upload's answer, as one transaction of the contacts
-- area (the same as POST /v1/audiences/{id}/contacts), and this row is what
-- its progress page reads on any node: running, then its report.
CREATE TABLE dashboard_imports (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    audience_id  TEXT NOT NULL,
    filename     TEXT NOT NULL,
    row_count    INTEGER NOT NULL,   -- rows read from the file
    dry_run      INTEGER NOT NULL DEFAULT 0,
    status       TEXT NOT NULL,      -- running, done, failed
    report       TEXT,               -- the import result (JSON) when done
    problem      TEXT,               -- why it failed, in words
    created_at   BIGINT NOT NULL,
    finished_at  BIGINT
);
CREATE INDEX dashboard_imports_created ON dashboard_imports (created_at);

-- +goose Down
DROP TABLE dashboard_imports;
