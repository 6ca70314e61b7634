-- +goose Up
-- events_email without its leading workspace_id: an email id is random and
-- names one workspace's email, so (email_id, seq) finds an email's timeline
-- as well, and every queried read still tests workspace_id on the row. Each
-- email event (two per delivered email) paid for a copy of the workspace id
-- in the index: about 60 bytes per delivered email (issue #47).
DROP INDEX events_email;
CREATE INDEX events_email ON events (email_id, seq);

-- +goose Down
DROP INDEX events_email;
CREATE INDEX events_email ON events (workspace_id, email_id, seq);
