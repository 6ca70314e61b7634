-- +goose Up
-- An email's delivery attempts (#48): one row per recipient per attempt,
-- written in the transaction of the outcome it led to, with the session it
-- went over and each SMTP command's reply (steps, JSON). Purged with the
-- events (MAILROOM_RETAIN_EVENTS).
CREATE TABLE email_attempts (
    email_id     TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    duration_ms  BIGINT NOT NULL,
    outcome      TEXT NOT NULL,
    stage        TEXT NOT NULL,
    code         INTEGER NOT NULL,
    enhanced     TEXT NOT NULL,
    reply        TEXT NOT NULL,
    mx           TEXT NOT NULL,
    remote_ip    TEXT NOT NULL,
    source_ip    TEXT NOT NULL,
    tls_version  TEXT NOT NULL,
    tls_cipher   TEXT NOT NULL,
    tls_verified INTEGER NOT NULL,
    mta_sts      TEXT NOT NULL,
    reused       INTEGER NOT NULL,
    steps        TEXT NOT NULL,
    PRIMARY KEY (email_id, recipient, attempt)
);
CREATE INDEX email_attempts_created ON email_attempts (created_at);
-- An email's story reads the webhook deliveries of its events.
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id);

-- +goose Down
DROP INDEX webhook_attempts_event;
DROP TABLE email_attempts;
