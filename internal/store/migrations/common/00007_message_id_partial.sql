-- +goose Up
-- An email has no Message-ID until delivery builds it, so every accepted
-- send used to add one more '' entry to this index. Only built messages are
-- ever looked up by Message-ID (asynchronous bounces and complaints).
DROP INDEX emails_message_id;
CREATE INDEX emails_message_id ON emails (message_id) WHERE message_id <> '';

-- +goose Down
DROP INDEX emails_message_id;
CREATE INDEX emails_message_id ON emails (message_id);
