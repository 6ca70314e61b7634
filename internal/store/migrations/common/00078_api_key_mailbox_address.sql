-- +goose Up
-- The address of the mailbox a key is bound to, kept with the key (as
-- domain_name is) so that authenticating a bound key reads no other area's
-- table: it sends only as this address and reads only the emails from it.
ALTER TABLE api_keys ADD COLUMN mailbox_address TEXT NOT NULL DEFAULT '';
UPDATE api_keys SET mailbox_address = COALESCE((SELECT LOWER(m.address) FROM mailboxes m WHERE m.id = api_keys.mailbox_id), '')
    WHERE mailbox_id IS NOT NULL;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN mailbox_address;
