-- +goose Up
-- Asynchronous bounces and complaints that carry no VERP address are matched
-- by the returned message's Message-ID.
CREATE INDEX emails_message_id ON emails (message_id);

-- The signed bytes of a message with recipients still owed a retry: a retry
-- sends exactly what was signed, never re-rendered or re-signed. The row goes
-- once every recipient is final.
CREATE TABLE outbound_messages (
    email_id     TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    data         BLOB NOT NULL,
    created_at   BIGINT NOT NULL
);

-- +goose Down
DROP TABLE outbound_messages;
DROP INDEX emails_message_id;
