-- +goose Up
-- Templates (internal/templates owns both tables). Content lives only in
-- versions, which are never edited; published_version_id points live sends
-- at one of them. deleted_at set = soft-deleted (reads answer 404).
CREATE TABLE templates (
    id                   TEXT PRIMARY KEY,
    workspace_id         TEXT NOT NULL,
    name                 TEXT NOT NULL,
    slug                 TEXT NOT NULL,
    description          TEXT NOT NULL DEFAULT '',
    published_version_id TEXT,
    latest_version       INTEGER NOT NULL DEFAULT 0,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    deleted_at           BIGINT
);
-- A slug is unique among a workspace's live templates; a deleted one frees it.
CREATE UNIQUE INDEX templates_workspace_slug ON templates (workspace_id, slug) WHERE deleted_at IS NULL;
CREATE INDEX templates_workspace_created ON templates (workspace_id, created_at, id);

CREATE TABLE template_versions (
    id           TEXT PRIMARY KEY,
    template_id  TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    version      INTEGER NOT NULL,
    subject      TEXT NOT NULL,
    html         TEXT NOT NULL DEFAULT '',
    text_body    TEXT NOT NULL DEFAULT '',
    variables    TEXT NOT NULL DEFAULT '[]',
    created_at   BIGINT NOT NULL,
    UNIQUE (template_id, version)
);

-- A send with a template keeps which one and which version rendered it.
ALTER TABLE emails ADD COLUMN template_id TEXT NOT NULL DEFAULT '';
ALTER TABLE emails ADD COLUMN template_version INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE emails DROP COLUMN template_version;
ALTER TABLE emails DROP COLUMN template_id;
DROP TABLE template_versions;
DROP TABLE templates;
