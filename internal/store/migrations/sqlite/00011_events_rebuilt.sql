-- +goose Up
-- The events table again, without the UNIQUE on id (nothing looks an event
-- up by id since 00010, and PostgreSQL dropped its index there) and without
-- AUTOINCREMENT. Every raised event paid for both: an entry in the id index,
-- and a write of sqlite_sequence's page in every transaction that raised
-- one; together about a tenth of a group commit's time. Without
-- AUTOINCREMENT a new seq is the largest one plus one: it differs only
-- after the newest events are deleted, and events are never deleted.
-- Upgrading copies the table once.
CREATE TABLE events_rebuilt (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    email_id     TEXT,
    type         TEXT NOT NULL,
    sequence     INTEGER NOT NULL,
    created_at   BIGINT NOT NULL,
    data         TEXT NOT NULL,
    webhook      INTEGER NOT NULL DEFAULT 1,
    dispatched   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO events_rebuilt (seq, id, workspace_id, email_id, type, sequence, created_at, data, webhook, dispatched)
    SELECT seq, id, workspace_id, email_id, type, sequence, created_at, data, webhook, dispatched FROM events;
DROP TABLE events;
ALTER TABLE events_rebuilt RENAME TO events;
CREATE INDEX events_email ON events (workspace_id, email_id, seq);
CREATE INDEX events_undispatched ON events (seq) WHERE dispatched = 0;
DELETE FROM sqlite_sequence WHERE name = 'events';

-- +goose Down
CREATE TABLE events_rebuilt (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL,
    email_id     TEXT,
    type         TEXT NOT NULL,
    sequence     INTEGER NOT NULL,
    created_at   BIGINT NOT NULL,
    data         TEXT NOT NULL,
    webhook      INTEGER NOT NULL DEFAULT 1,
    dispatched   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO events_rebuilt (seq, id, workspace_id, email_id, type, sequence, created_at, data, webhook, dispatched)
    SELECT seq, id, workspace_id, email_id, type, sequence, created_at, data, webhook, dispatched FROM events;
DROP TABLE events;
ALTER TABLE events_rebuilt RENAME TO events;
CREATE INDEX events_email ON events (workspace_id, email_id, seq);
CREATE INDEX events_undispatched ON events (seq) WHERE dispatched = 0;
