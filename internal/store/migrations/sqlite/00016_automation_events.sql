-- +goose Up
-- Durable automation triggers (tag.added, tag.removed), written in the
-- transaction of the change; the automations area consumes them in seq
-- order.
CREATE TABLE automation_events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    contact_id   TEXT NOT NULL,
    data         TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    consumed_at  BIGINT
);
CREATE INDEX automation_events_pending ON automation_events (consumed_at, created_at);

-- +goose Down
DROP TABLE automation_events;
