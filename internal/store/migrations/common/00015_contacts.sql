-- +goose Up
-- Contacts: workspace-level people (issue 20). email is the normalized
-- address (trimmed, lowercased); tags is a JSON array of lowercased tags,
-- attributes a JSON object of strings (see docs/decisions.md, "Contacts and
-- audiences").
CREATE TABLE contacts (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    email        TEXT NOT NULL,
    first_name   TEXT NOT NULL DEFAULT '',
    last_name    TEXT NOT NULL DEFAULT '',
    attributes   TEXT NOT NULL DEFAULT '{}',
    tags         TEXT NOT NULL DEFAULT '[]',
    search       TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE UNIQUE INDEX contacts_workspace_email ON contacts (workspace_id, email);
-- search is "email first last" lowercased: ?q= tests one column, read from
-- this index before any row is fetched.
CREATE INDEX contacts_workspace_created ON contacts (workspace_id, created_at, id, search);

-- Audiences are soft-deleted (deleted_at) so their memberships, and the
-- unsubscribes among them, stay on record. require_double_opt_in NULL means
-- the workspace default.
CREATE TABLE audiences (
    id                    TEXT PRIMARY KEY,
    workspace_id          TEXT NOT NULL,
    name                  TEXT NOT NULL,
    description           TEXT NOT NULL DEFAULT '',
    require_double_opt_in INTEGER,
    confirmation_subject  TEXT,
    confirmation_body     TEXT,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL,
    deleted_at            BIGINT
);
CREATE UNIQUE INDEX audiences_workspace_name ON audiences (workspace_id, name) WHERE deleted_at IS NULL;

-- One row per (audience, contact): its own id, a status and per-list merge
-- fields. confirm_sends counts double opt-in mails (at most 3).
CREATE TABLE memberships (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL,
    audience_id   TEXT NOT NULL,
    contact_id    TEXT NOT NULL,
    status        TEXT NOT NULL,
    attributes    TEXT NOT NULL DEFAULT '{}',
    confirm_sends INTEGER NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE UNIQUE INDEX memberships_audience_contact ON memberships (audience_id, contact_id);
CREATE INDEX memberships_audience_created ON memberships (audience_id, created_at, id);
CREATE INDEX memberships_contact ON memberships (contact_id);

-- +goose Down
DROP TABLE memberships;
DROP TABLE audiences;
DROP TABLE contacts;
