-- +goose Up
-- A CSV import started from the dashboard (internal/dashboard owns it): the
-- upload's parsed rows are committed here with a dashboard_import job before
-- the answer; the job runs the import as one transaction of the contacts
-- area (the same as POST /v1/audiences/{id}/contacts), on any node and again
-- after a crash, and this row is what the progress page reads: running,
-- then its report.
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
    rows_json    TEXT NOT NULL DEFAULT '[]', -- the parsed rows until the import ends
    created_at   BIGINT NOT NULL,
    finished_at  BIGINT
);
CREATE INDEX dashboard_imports_created ON dashboard_imports (created_at);

-- +goose Down
DROP TABLE dashboard_imports;
