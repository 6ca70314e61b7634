-- +goose Up
-- Webhook deliveries and their log name the event by its seq, the events
-- table's primary key (see PostgreSQL's 00010, which drops the index on
-- events.id). Here the UNIQUE on events.id stays: dropping it means
-- rebuilding the table.
ALTER TABLE webhook_deliveries ADD COLUMN event_seq INTEGER;
ALTER TABLE webhook_attempts ADD COLUMN event_seq INTEGER;
UPDATE webhook_deliveries SET event_seq = (SELECT seq FROM events WHERE events.id = webhook_deliveries.event_id);
UPDATE webhook_attempts SET event_seq = (SELECT seq FROM events WHERE events.id = webhook_attempts.event_id);

-- +goose Down
ALTER TABLE webhook_attempts DROP COLUMN event_seq;
ALTER TABLE webhook_deliveries DROP COLUMN event_seq;
