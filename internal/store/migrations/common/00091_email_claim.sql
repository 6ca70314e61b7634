-- +goose Up
-- The fencing token of the delivery attempt that holds an email (set when
-- it goes to sending): an attempt's outcome commits only while its token
-- is still the email's, so a node given up by the others cannot overwrite
-- the attempt that took its work over.
ALTER TABLE emails ADD COLUMN claim TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE emails DROP COLUMN claim;
