-- +goose Up
-- A broadcast's recipients keyed by (broadcast_id, contact_id): the id
-- (broadcast_id_contact_id) is no longer stored, nor its index, and only
-- the pending ones are indexed by status (empty once a broadcast is out).
-- SQLite's 00097 also drops the rowid.
DROP INDEX broadcast_recipients_status;
ALTER TABLE broadcast_recipients DROP CONSTRAINT broadcast_recipients_pkey;
ALTER TABLE broadcast_recipients ADD PRIMARY KEY (broadcast_id, contact_id);
ALTER TABLE broadcast_recipients DROP COLUMN id;
CREATE INDEX broadcast_recipients_pending ON broadcast_recipients (broadcast_id, contact_id) WHERE status = 'pending';

-- +goose Down
DROP INDEX broadcast_recipients_pending;
ALTER TABLE broadcast_recipients ADD COLUMN id TEXT;
UPDATE broadcast_recipients SET id = broadcast_id || '_' || contact_id;
ALTER TABLE broadcast_recipients ALTER COLUMN id SET NOT NULL;
ALTER TABLE broadcast_recipients DROP CONSTRAINT broadcast_recipients_pkey;
ALTER TABLE broadcast_recipients ADD PRIMARY KEY (id);
CREATE INDEX broadcast_recipients_status ON broadcast_recipients (broadcast_id, status, id);
