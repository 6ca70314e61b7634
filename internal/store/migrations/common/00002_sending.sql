-- +goose Up
CREATE TABLE emails (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL,
    api_key_id      TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL,
    from_addr       TEXT NOT NULL,
    to_addrs        TEXT NOT NULL,
    cc_addrs        TEXT NOT NULL DEFAULT '[]',
    bcc_addrs       TEXT NOT NULL DEFAULT '[]',
    reply_to        TEXT NOT NULL DEFAULT '[]',
    subject         TEXT NOT NULL,
    html            TEXT,
    text_body       TEXT,
    headers         TEXT NOT NULL DEFAULT '{}',
    attachments     TEXT NOT NULL DEFAULT '[]',
    tags            TEXT NOT NULL DEFAULT '{}',
    test_mode       INTEGER NOT NULL DEFAULT 0,
    message_id      TEXT NOT NULL DEFAULT '',
    scheduled_at    BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    opens           INTEGER NOT NULL DEFAULT 0,
    clicks          INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    recipients      TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX emails_workspace_created ON emails (workspace_id, created_at, id);

CREATE TABLE idempotency_keys (
    workspace_id TEXT NOT NULL,
    key          TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    email_id     TEXT NOT NULL,
    status       INTEGER NOT NULL,
    response     TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, key)
);

-- workspace_id is '' on global rows (added by the operator, service-wide).
CREATE TABLE suppressions (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    email        TEXT NOT NULL,
    reason       TEXT NOT NULL,
    is_global    INTEGER NOT NULL DEFAULT 0,
    source_email_id TEXT,
    created_at   BIGINT NOT NULL,
    UNIQUE (workspace_id, email)
);
CREATE INDEX suppressions_email ON suppressions (email);
CREATE INDEX suppressions_workspace_created ON suppressions (workspace_id, created_at, id);

-- +goose Down
DROP TABLE suppressions;
DROP TABLE idempotency_keys;
DROP TABLE emails;
