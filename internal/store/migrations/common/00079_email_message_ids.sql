-- +goose Up
-- Message-IDs that a client chose (SMTP submission keeps the client's own
-- when it is valid and new to the workspace): the primary key is what
-- "new" is checked against, so emails need no index on message_id.
CREATE TABLE email_message_ids (
    workspace_id TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    email_id     TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, message_id)
);

-- +goose Down
DROP TABLE email_message_ids;
