-- +goose Up
-- events_email on email_id alone: seq is the table's rowid, which every
-- entry of an index on SQLite ends with, so (email_id) orders an email's
-- events by seq as (email_id, seq) did, without the second copy of seq in
-- each entry (about 4 bytes of each of a broadcast recipient's two events,
-- issue #47). PostgreSQL keeps (email_id, seq): its indexes hold no rowid.
DROP INDEX events_email;
CREATE INDEX events_email ON events (email_id);

-- +goose Down
DROP INDEX events_email;
CREATE INDEX events_email ON events (email_id, seq);
