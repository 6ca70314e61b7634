-- +goose Up
-- A CSV file uploaded on the dashboard, kept between its steps (columns
-- mapped, checked, imported): UTF-8 text, at most an import's 8 MB, bound to
-- the session and the workspace that uploaded it; deleted when imported, or
-- an hour after it was uploaded (internal/dashboard owns it).
CREATE TABLE dashboard_uploads (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    session_id   TEXT NOT NULL,    -- dashboard_sessions.id
    audience_id  TEXT NOT NULL,
    filename     TEXT NOT NULL,
    content      TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX dashboard_uploads_session ON dashboard_uploads (session_id);
CREATE INDEX dashboard_uploads_expires ON dashboard_uploads (expires_at);

-- +goose Down
DROP TABLE dashboard_uploads;
