-- +goose Up
-- Captured mail (MAILROOM_OUTBOUND=capture, `mailroom dev`): each message the
-- delivery engine would have handed to a server, as it would have gone out
-- (signed), kept instead of sent. BLOB here, the one difference between the
-- dialects' copies of this file.
CREATE TABLE captured_emails (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    email_id     TEXT NOT NULL,
    mail_from    TEXT NOT NULL,
    rcpt_to      TEXT NOT NULL,
    subject      TEXT NOT NULL,
    size         INTEGER NOT NULL,
    created_at   BIGINT NOT NULL,
    data         BLOB NOT NULL
);
CREATE INDEX captured_emails_workspace ON captured_emails (workspace_id, created_at, id);

-- +goose Down
DROP TABLE captured_emails;
