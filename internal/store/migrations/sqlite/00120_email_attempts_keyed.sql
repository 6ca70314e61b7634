-- +goose Up
-- email_attempts keyed by (email_id, recipient, attempt) in a table without
-- rowid, without workspace_id and without the index on created_at: the key
-- was stored twice (the rowid table and its primary key index), an attempt's
-- workspace is its email's (delivery's Attempts reads it there), and
-- retention now finds old attempts by the email id, which begins with its
-- creation time (delivery.PurgeAttempts). About 115 bytes less per
-- delivered recipient (issue #47). Upgrading copies the table once.
CREATE TABLE email_attempts_keyed (
    email_id     TEXT NOT NULL,
    recipient    TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
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
) WITHOUT ROWID;
INSERT INTO email_attempts_keyed SELECT email_id, recipient, attempt, created_at, duration_ms, outcome, stage, code,
    enhanced, reply, mx, remote_ip, source_ip, tls_version, tls_cipher, tls_verified, mta_sts, reused, steps FROM email_attempts;
DROP TABLE email_attempts;
ALTER TABLE email_attempts_keyed RENAME TO email_attempts;

-- +goose Down
ALTER TABLE email_attempts ADD COLUMN workspace_id TEXT NOT NULL DEFAULT '';
UPDATE email_attempts SET workspace_id = COALESCE((SELECT e.workspace_id FROM emails e WHERE e.id = email_attempts.email_id), '');
CREATE INDEX email_attempts_created ON email_attempts (created_at);
