-- +goose Up
-- Inbound mail (issue 23): mailboxes gain a name and their mail rules (a
-- JSON array, CONTRACT-WAVE2 "Rule"); an address receives for one mailbox
-- only, across workspaces, so RCPT finds it with one index read.
ALTER TABLE mailboxes ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE mailboxes ADD COLUMN rules TEXT NOT NULL DEFAULT '[]';
CREATE UNIQUE INDEX mailboxes_address ON mailboxes (address);
CREATE INDEX mailboxes_workspace ON mailboxes (workspace_id, created_at, id);

-- A key bound to a mailbox (its identity) reads only that mailbox.
ALTER TABLE api_keys ADD COLUMN mailbox_id TEXT;

-- A webhook endpoint scoped to one mailbox gets only that mailbox's events.
ALTER TABLE webhooks ADD COLUMN mailbox_id TEXT;

-- The mailbox an event concerns (email.received, email.filtered), so the
-- dispatcher can leave out endpoints scoped to another mailbox.
ALTER TABLE events ADD COLUMN mailbox_id TEXT;

-- A workspace whose default mailbox (inbox@<workspace subdomain>) was made
-- once: deleting that mailbox later does not bring it back.
CREATE TABLE inbound_provisioned (
    workspace_id TEXT PRIMARY KEY,
    created_at   BIGINT NOT NULL
);

-- +goose Down
DROP TABLE inbound_provisioned;
ALTER TABLE events DROP COLUMN mailbox_id;
ALTER TABLE webhooks DROP COLUMN mailbox_id;
ALTER TABLE api_keys DROP COLUMN mailbox_id;
DROP INDEX mailboxes_workspace;
DROP INDEX mailboxes_address;
ALTER TABLE mailboxes DROP COLUMN rules;
ALTER TABLE mailboxes DROP COLUMN name;
