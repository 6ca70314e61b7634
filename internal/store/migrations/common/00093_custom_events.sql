-- +goose Up
-- Named custom events (the Resend SDK's events.*): an automation whose
-- trigger is event: <name> starts when POST /v1/events/send names it.
-- The schema (JSON {field: string|number|boolean|date}) checks payloads.
CREATE TABLE custom_events (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    name         TEXT NOT NULL,
    schema       TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT,
    UNIQUE (workspace_id, name)
);

-- +goose Down
DROP TABLE custom_events;
