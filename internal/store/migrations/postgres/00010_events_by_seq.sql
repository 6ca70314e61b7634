-- +goose Up
-- Webhook deliveries and their log name the event by its seq, the events
-- table's primary key, so events need no index on id: every raised event
-- paid for that index, most of them never fanned out to any endpoint.
-- event_id stays (it is the webhook-id header and the API's event_id).
ALTER TABLE webhook_deliveries ADD COLUMN event_seq BIGINT;
ALTER TABLE webhook_attempts ADD COLUMN event_seq BIGINT;
UPDATE webhook_deliveries d SET event_seq = e.seq FROM events e WHERE e.id = d.event_id;
UPDATE webhook_attempts a SET event_seq = e.seq FROM events e WHERE e.id = a.event_id;
ALTER TABLE events DROP CONSTRAINT events_id_key;

-- +goose Down
ALTER TABLE events ADD CONSTRAINT events_id_key UNIQUE (id);
ALTER TABLE webhook_attempts DROP COLUMN event_seq;
ALTER TABLE webhook_deliveries DROP COLUMN event_seq;
