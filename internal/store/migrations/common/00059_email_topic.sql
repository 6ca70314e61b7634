-- +goose Up
-- The topic a send names (issue 21): a scheduled send is checked against
-- its recipients' opt-outs again when it is due.
ALTER TABLE emails ADD COLUMN topic_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE emails DROP COLUMN topic_id;
