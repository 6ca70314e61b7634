-- +goose Up
-- Topics (internal/topics owns both tables): opt-out categories of a
-- workspace. topic_key is immutable and stays reserved once archived
-- (archived_at set), so a send or a link naming it never meets another
-- topic under the same key.
CREATE TABLE topics (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL,
    topic_key      TEXT NOT NULL,
    name           TEXT NOT NULL,
    description    TEXT NOT NULL DEFAULT '',
    default_opt_in INTEGER NOT NULL,
    required       INTEGER NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    archived_at    BIGINT
);
CREATE UNIQUE INDEX topics_workspace_key ON topics (workspace_id, topic_key);

-- One row per (topic, address) that said something; an address without a
-- row has the topic's default_opt_in. email is the normalized address, so
-- a preference holds for a person whether or not they are a contact.
CREATE TABLE topic_preferences (
    workspace_id TEXT NOT NULL,
    topic_id     TEXT NOT NULL,
    email        TEXT NOT NULL,
    subscribed   INTEGER NOT NULL,
    source       TEXT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (topic_id, email)
);
CREATE INDEX topic_preferences_email ON topic_preferences (workspace_id, email);

-- +goose Down
DROP TABLE topic_preferences;
DROP TABLE topics;
