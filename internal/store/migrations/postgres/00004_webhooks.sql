-- +goose Up
-- Webhook endpoints. secret and previous_secret are sealed with the node's
-- secret key (secretbox); previous_secret keeps signing until
-- previous_secret_until during a rotation. accepted_at starts the 18-hour
-- silence clock: the last 2xx, or creation / re-activation when none since.
CREATE TABLE webhooks (
    id                    TEXT PRIMARY KEY,
    workspace_id          TEXT NOT NULL,
    url                   TEXT NOT NULL,
    events                TEXT NOT NULL,
    headers               TEXT NOT NULL DEFAULT '{}',
    secret                TEXT NOT NULL,
    previous_secret       TEXT,
    previous_secret_until BIGINT,
    active                INTEGER NOT NULL DEFAULT 1,
    disabled_reason       TEXT,
    disabled_at           BIGINT,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    last_success_at       BIGINT,
    last_failure_at       BIGINT,
    accepted_at           BIGINT NOT NULL,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL
);
CREATE INDEX webhooks_workspace ON webhooks (workspace_id, created_at);

-- The delivery queue: one row per (event, endpoint) still owed. held = 1
-- while the endpoint is disabled. due_at is when a worker may take the row:
-- the next attempt, or the end of a worker's lease while it holds the row
-- (so a crashed node's rows come due again); claim names that lease.
CREATE TABLE webhook_deliveries (
    seq             BIGSERIAL PRIMARY KEY,
    webhook_id      TEXT NOT NULL,
    workspace_id    TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    event_at        BIGINT NOT NULL,
    held            INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    due_at          BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    claim           TEXT,
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE held = 0;

-- The delivery log: one row per attempt, plus one row without a status code
-- when an event is abandoned. payload keeps the body of test events, which
-- are not in the event log, so that they can be replayed. kind: event (an
-- attempt of the queue), abandoned, test or replay.
CREATE TABLE webhook_attempts (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL,
    webhook_id    TEXT NOT NULL,
    event_id      TEXT NOT NULL,
    event         TEXT NOT NULL,
    kind          TEXT NOT NULL DEFAULT 'event',
    attempt       INTEGER NOT NULL,
    status_code   INTEGER,
    response_body TEXT NOT NULL DEFAULT '',
    duration_ms   BIGINT NOT NULL DEFAULT 0,
    error         TEXT,
    payload       TEXT,
    created_at    BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_workspace ON webhook_attempts (workspace_id, created_at, id);
CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, created_at, id);
CREATE INDEX webhook_attempts_created ON webhook_attempts (created_at);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
