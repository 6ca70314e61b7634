-- +goose Up
-- The bytes of received messages (tables of 00024's messages): BYTEA here,
-- BLOB on SQLite, the one difference between the dialects' inbound tables.
-- Attachment and inline-image bytes, named as the message lists them
-- (unique per message; never a path on disk).
CREATE TABLE message_parts (
    message_id   TEXT NOT NULL,
    filename     TEXT NOT NULL,
    content_type TEXT NOT NULL,
    data         BYTEA NOT NULL,
    PRIMARY KEY (message_id, filename)
);

-- The message as it arrived, for forwarding it wrapped (message/rfc822).
CREATE TABLE message_raw (
    message_id TEXT PRIMARY KEY,
    data       BYTEA NOT NULL
);

-- +goose Down
DROP TABLE message_raw;
DROP TABLE message_parts;
