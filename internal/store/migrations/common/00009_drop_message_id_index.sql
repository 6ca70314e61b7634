-- +goose Up
-- A Message-ID holds its email's id (outbound.MessageIDFor), so reports
-- find their email through the primary key; the index cost every accepted
-- send one more index entry in the busiest transaction.
DROP INDEX emails_message_id;

-- +goose Down
CREATE INDEX emails_message_id ON emails (message_id) WHERE message_id <> '';
