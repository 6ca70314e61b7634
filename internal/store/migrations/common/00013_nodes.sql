-- +goose Up
-- One row per running node: a node whose heartbeat (database clock, ms)
-- stops is gone, and the others take up its running jobs and webhook
-- leases (see docs/decisions.md, "Recovery after a crash").
CREATE TABLE nodes (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

-- Settings every node must agree on, written by the first node to start:
-- secret_key_fingerprint is an HMAC of a constant under the secret key, so
-- a node with another key is refused at start.
CREATE TABLE cluster_settings (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE cluster_settings;
DROP TABLE nodes;
