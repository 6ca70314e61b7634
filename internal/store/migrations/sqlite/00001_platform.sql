-- +goose Up
CREATE TABLE workspaces (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    owner_email     TEXT NOT NULL,
    owner_confirmed INTEGER NOT NULL DEFAULT 1,
    created_at      BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    key_hint     TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id, created_at);

-- The event log: every raised event, written in the same transaction as the
-- state change behind it. dispatched = 0 marks events the webhook dispatcher
-- has not fanned out yet; timeline-only entries are written with 1.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL,
    email_id     TEXT,
    type         TEXT NOT NULL,
    sequence     INTEGER NOT NULL,
    created_at   BIGINT NOT NULL,
    data         TEXT NOT NULL,
    webhook      INTEGER NOT NULL DEFAULT 1,
    dispatched   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_email ON events (workspace_id, email_id, seq);
CREATE INDEX events_undispatched ON events (seq) WHERE dispatched = 0;

-- +goose Down
DROP TABLE events;
DROP TABLE api_keys;
DROP TABLE workspaces;
