-- +goose Up
-- Segments (issue 22): a rule set over an audience's members or over every
-- contact of the workspace (audience_id ''). Membership is computed when
-- read, never stored; member_count is the last count, kept with when it
-- was taken. rules is the JSON array as the API took it.
CREATE TABLE segments (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    audience_id  TEXT NOT NULL DEFAULT '',
    name         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    match_mode   TEXT NOT NULL,
    rules        TEXT NOT NULL DEFAULT '[]',
    member_count INTEGER NOT NULL DEFAULT 0,
    counted_at   BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX segments_workspace_created ON segments (workspace_id, created_at, id);

-- +goose Down
DROP TABLE segments;
