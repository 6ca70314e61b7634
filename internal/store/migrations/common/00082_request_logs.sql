-- +goose Up
-- The request log (issue #41): one row per authenticated /v1 call, written
-- in batches off the request path. No bodies: only their sizes, the
-- answer's error code, and the query string with secrets redacted. Ids are
-- time-ordered, so (workspace_id, id) serves the newest-first list and its
-- time window, and id alone the retention purge.
CREATE TABLE request_logs (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL,
    api_key_id     TEXT NOT NULL,
    method         TEXT NOT NULL,
    path           TEXT NOT NULL,
    status         INTEGER NOT NULL,
    error_code     TEXT NOT NULL,
    user_agent     TEXT,
    request_id     TEXT NOT NULL,
    duration_us    BIGINT NOT NULL,
    request_bytes  BIGINT NOT NULL,
    response_bytes BIGINT NOT NULL,
    content_type   TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
CREATE INDEX request_logs_workspace ON request_logs (workspace_id, id);

-- +goose Down
DROP TABLE request_logs;
