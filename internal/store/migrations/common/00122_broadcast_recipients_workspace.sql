-- +goose Up
-- A broadcast recipient's workspace is its broadcast's: the one read that
-- tested it (broadcasts' recipientRows, for delivery and for reads of a
-- recipient's email) tests the broadcast's instead. About 30 bytes less per
-- recipient (issue #47). SQLite rewrites the table once.
ALTER TABLE broadcast_recipients DROP COLUMN workspace_id;

-- +goose Down
ALTER TABLE broadcast_recipients ADD COLUMN workspace_id TEXT NOT NULL DEFAULT '';
UPDATE broadcast_recipients SET workspace_id = COALESCE((SELECT b.workspace_id FROM broadcasts b WHERE b.id = broadcast_recipients.broadcast_id), '');
