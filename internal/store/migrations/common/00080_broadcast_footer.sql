-- +goose Up
-- Whether a broadcast whose body shows no unsubscribe link of its own gets
-- Mailroom's footer with one (1, the default); a team that writes the link
-- into its own template turns it off, and problems[] then asks for the link.
ALTER TABLE broadcasts ADD COLUMN unsubscribe_footer INTEGER NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE broadcasts DROP COLUMN unsubscribe_footer;
