-- +goose Up
-- Automations (internal/automations owns both tables). The YAML is kept
-- byte for byte as written, in every version; automations.yaml is the
-- current version's copy. deleted_at set = removed (reads answer 404).
CREATE TABLE automations (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL,
    name          TEXT NOT NULL,
    slug          TEXT NOT NULL,
    trigger_event TEXT NOT NULL,
    trigger_tag   TEXT NOT NULL DEFAULT '',
    trigger_audience_id TEXT NOT NULL DEFAULT '',
    enabled       INTEGER NOT NULL,  -- 1 or 0
    version       INTEGER NOT NULL,
    yaml          TEXT NOT NULL,
    last_error    TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    deleted_at    BIGINT
);
CREATE UNIQUE INDEX automations_workspace_slug ON automations (workspace_id, slug) WHERE deleted_at IS NULL;
CREATE INDEX automations_workspace_created ON automations (workspace_id, created_at, id);
CREATE INDEX automations_trigger ON automations (workspace_id, trigger_event) WHERE deleted_at IS NULL;

CREATE TABLE automation_versions (
    id            TEXT PRIMARY KEY,
    automation_id TEXT NOT NULL,
    workspace_id  TEXT NOT NULL,
    version       INTEGER NOT NULL,
    yaml          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    UNIQUE (automation_id, version)
);

-- +goose Down
DROP TABLE automation_versions;
DROP TABLE automations;
