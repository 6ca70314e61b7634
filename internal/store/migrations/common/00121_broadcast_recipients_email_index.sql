-- +goose Up
-- broadcast_recipients_email only kept one row per address in a broadcast,
-- which the primary key (broadcast_id, contact_id) already does: the one
-- statement that fills a broadcast's recipients (broadcasts' snapshot)
-- reads contacts, whose addresses are unique in their workspace
-- (contacts_workspace_email), so two contacts never bring one address. 84
-- bytes less per recipient on SQLite (issue #47).
DROP INDEX broadcast_recipients_email;

-- +goose Down
CREATE UNIQUE INDEX broadcast_recipients_email ON broadcast_recipients (broadcast_id, email);
