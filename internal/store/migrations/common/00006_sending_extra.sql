-- +goose Up
-- The scheduler promotes due rows every second; this keeps that scan to the
-- rows that are actually waiting.
CREATE INDEX emails_scheduled_due ON emails (scheduled_at) WHERE status = 'scheduled';
-- A mail:send-only key lists just what it sent.
CREATE INDEX emails_workspace_key_created ON emails (workspace_id, api_key_id, created_at, id);
-- The hourly cleanup forgets keys older than 24 hours.
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP INDEX idempotency_keys_created;
DROP INDEX emails_workspace_key_created;
DROP INDEX emails_scheduled_due;
