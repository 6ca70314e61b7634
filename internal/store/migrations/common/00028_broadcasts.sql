-- +goose Up
-- Broadcasts (issue 22): one message rendered per member of an audience
-- (optionally narrowed by a segment). status: draft, scheduled, sending,
-- sent, cancelled.
CREATE TABLE broadcasts (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    name         TEXT NOT NULL DEFAULT '',
    from_addr    TEXT NOT NULL,
    reply_to     TEXT NOT NULL DEFAULT '',
    subject      TEXT NOT NULL DEFAULT '',
    html         TEXT NOT NULL DEFAULT '',
    text_body    TEXT NOT NULL DEFAULT '',
    audience_id  TEXT NOT NULL DEFAULT '',
    segment_id   TEXT NOT NULL DEFAULT '',
    topic_id     TEXT NOT NULL DEFAULT '',
    template_id  TEXT NOT NULL DEFAULT '',
    track_opens  INTEGER NOT NULL DEFAULT 0,
    track_clicks INTEGER NOT NULL DEFAULT 0,
    status       TEXT NOT NULL,
    scheduled_at BIGINT,
    started_at   BIGINT,
    finished_at  BIGINT,
    cancelled_at BIGINT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX broadcasts_workspace_created ON broadcasts (workspace_id, created_at, id);

-- The recipients a send snapshotted: one row per address, pending until its
-- batch hands the rendered email to delivery (then email_id is set and the
-- email's own status tells what became of it), or skipped with a reason.
CREATE TABLE broadcast_recipients (
    id           TEXT PRIMARY KEY,
    broadcast_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    contact_id   TEXT NOT NULL,
    email        TEXT NOT NULL,
    first_name   TEXT NOT NULL DEFAULT '',
    last_name    TEXT NOT NULL DEFAULT '',
    attributes   TEXT NOT NULL DEFAULT '{}',
    member_attributes TEXT NOT NULL DEFAULT '{}',
    status       TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    email_id     TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE UNIQUE INDEX broadcast_recipients_email ON broadcast_recipients (broadcast_id, email);
CREATE INDEX broadcast_recipients_status ON broadcast_recipients (broadcast_id, status, id);

-- +goose Down
DROP TABLE broadcast_recipients;
DROP TABLE broadcasts;
