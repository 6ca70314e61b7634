-- +goose Up
-- An email's page lists the webhook deliveries of its events (by event id).
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id);

-- +goose Down
DROP INDEX webhook_attempts_event;
