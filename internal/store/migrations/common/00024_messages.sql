-- +goose Up
-- Received (and, from the receive side, sent) messages. Address lists,
-- references, headers, auth and the attachment lists are JSON text;
-- bodies are text. direction is received or sent. unread and archived are
-- the flags of POST /v1/messages/{id}/archive. received_at orders lists.
CREATE TABLE messages (
    id                TEXT PRIMARY KEY,
    workspace_id      TEXT NOT NULL,
    mailbox_id        TEXT NOT NULL,
    thread_id         TEXT NOT NULL,
    direction         TEXT NOT NULL,
    mail_from         TEXT NOT NULL,
    from_addr         TEXT NOT NULL,
    from_name         TEXT,
    to_addrs          TEXT NOT NULL,
    cc_addrs          TEXT NOT NULL,
    subject           TEXT NOT NULL,
    snippet           TEXT NOT NULL,
    text_body         TEXT,
    html_body         TEXT,
    date_header       TEXT,
    message_id_header TEXT,
    in_reply_to       TEXT,
    refs              TEXT NOT NULL,
    list_id           TEXT,
    headers           TEXT NOT NULL,
    spam_verdict      TEXT NOT NULL,
    auth              TEXT NOT NULL,
    automated         INTEGER NOT NULL,
    attachments       TEXT NOT NULL,
    inline_images     TEXT NOT NULL,
    unread            INTEGER NOT NULL,
    archived          INTEGER NOT NULL,
    size              BIGINT NOT NULL,
    email_id          TEXT,
    received_at       BIGINT NOT NULL
);
CREATE INDEX messages_mailbox ON messages (workspace_id, mailbox_id, received_at, id);
CREATE INDEX messages_workspace ON messages (workspace_id, received_at, id);
CREATE INDEX messages_thread ON messages (thread_id, received_at, id);
CREATE INDEX messages_msgid ON messages (workspace_id, mailbox_id, message_id_header);

-- Conversations. subject_key is the subject without reply and forward
-- prefixes, lowercased: the fallback for mail that lost its threading
-- headers.
CREATE TABLE threads (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL,
    mailbox_id      TEXT NOT NULL,
    subject         TEXT NOT NULL,
    subject_key     TEXT NOT NULL,
    message_count   INTEGER NOT NULL,
    last_message_at BIGINT NOT NULL,
    created_at      BIGINT NOT NULL
);
CREATE INDEX threads_recent ON threads (workspace_id, last_message_at, id);
CREATE INDEX threads_subject ON threads (mailbox_id, subject_key, last_message_at);

-- +goose Down
DROP TABLE threads;
DROP TABLE messages;
