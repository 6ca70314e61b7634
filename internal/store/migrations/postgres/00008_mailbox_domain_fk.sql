-- +goose Up
-- A mailbox created while its domain is being deleted: the delete counted
-- no mailboxes, then removed the domain under the new one. The foreign key
-- makes PostgreSQL settle that race (the insert locks the domain row; the
-- delete fails, and answers domain_in_use). SQLite needs nothing: its one
-- writer runs the two transactions one after the other. NOT VALID: rows
-- already there are not checked (none can be orphaned: nothing created
-- mailboxes before this), but every new mailbox and every domain delete is.
ALTER TABLE mailboxes ADD CONSTRAINT mailboxes_domain_fk FOREIGN KEY (domain_id) REFERENCES domains (id) NOT VALID;

-- +goose Down
ALTER TABLE mailboxes DROP CONSTRAINT mailboxes_domain_fk;
