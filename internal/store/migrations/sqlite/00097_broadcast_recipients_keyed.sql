-- +goose Up
-- A broadcast's recipients keyed by (broadcast_id, contact_id) in a table
-- without rowid: the id (broadcast_id_contact_id) is no longer stored, nor
-- its index, and the rows of one broadcast lie together in key order, which
-- is the order the fan-out and the recipients page read them in. Only the
-- pending ones are indexed by status: once a broadcast is out that index is
-- empty. About 200 bytes less per recipient.
CREATE TABLE broadcast_recipients_keyed (
    broadcast_id TEXT NOT NULL,
    contact_id   TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    email        TEXT NOT NULL,
    first_name   TEXT NOT NULL DEFAULT '',
    last_name    TEXT NOT NULL DEFAULT '',
    attributes   TEXT NOT NULL DEFAULT '{}',
    member_attributes TEXT NOT NULL DEFAULT '{}',
    status       TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    email_id     TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (broadcast_id, contact_id)
) WITHOUT ROWID;
INSERT INTO broadcast_recipients_keyed (broadcast_id, contact_id, workspace_id, email, first_name, last_name, attributes, member_attributes,
    status, reason, email_id, created_at, updated_at)
    SELECT broadcast_id, contact_id, workspace_id, email, first_name, last_name, attributes, member_attributes,
    status, reason, email_id, created_at, updated_at FROM broadcast_recipients;
DROP TABLE broadcast_recipients;
ALTER TABLE broadcast_recipients_keyed RENAME TO broadcast_recipients;
CREATE UNIQUE INDEX broadcast_recipients_email ON broadcast_recipients (broadcast_id, email);
CREATE INDEX broadcast_recipients_pending ON broadcast_recipients (broadcast_id, contact_id) WHERE status = 'pending';

-- +goose Down
CREATE TABLE broadcast_recipients_rowid (
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
INSERT INTO broadcast_recipients_rowid (id, broadcast_id, workspace_id, contact_id, email, first_name, last_name, attributes, member_attributes,
    status, reason, email_id, created_at, updated_at)
    SELECT broadcast_id || '_' || contact_id, broadcast_id, workspace_id, contact_id, email, first_name, last_name, attributes, member_attributes,
    status, reason, email_id, created_at, updated_at FROM broadcast_recipients;
DROP TABLE broadcast_recipients;
ALTER TABLE broadcast_recipients_rowid RENAME TO broadcast_recipients;
CREATE UNIQUE INDEX broadcast_recipients_email ON broadcast_recipients (broadcast_id, email);
CREATE INDEX broadcast_recipients_status ON broadcast_recipients (broadcast_id, status, id);
