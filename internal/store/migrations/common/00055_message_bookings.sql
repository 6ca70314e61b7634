-- +goose Up
-- Receive-side scheduled sends (POST /v1/messages with send_at, issue 23).
-- The email itself is the sending service's scheduled email (email_id);
-- this row is inbound's side of it: the mailbox it goes from, the thread it
-- answers, the sent copy to store when it goes (sent_copy, JSON), and its
-- state as the sending service reports it (scheduled, queued once it went,
-- cancelled, failed). message_id is the stored sent copy once it went.
CREATE TABLE message_bookings (
    email_id     TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    mailbox_id   TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    status       TEXT NOT NULL,
    send_at      BIGINT NOT NULL,
    sent_copy    TEXT NOT NULL,
    message_id   TEXT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX message_bookings_due ON message_bookings (workspace_id, status, send_at, email_id);
CREATE INDEX message_bookings_mailbox ON message_bookings (workspace_id, mailbox_id, status, send_at, email_id);

-- +goose Down
DROP TABLE message_bookings;
