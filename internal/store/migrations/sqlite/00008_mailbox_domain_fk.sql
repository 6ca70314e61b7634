-- +goose Up
-- PostgreSQL adds a foreign key from mailboxes to domains here (see its
-- 00008). SQLite's one writer already serialises a domain delete and a
-- mailbox insert, so the numbering stays alike with nothing to do.
SELECT 1;

-- +goose Down
SELECT 1;
