-- +goose Up
-- The text GET /v1/search reads beside subject (issue 23): search_body is
-- the text body, or the html body as text, cut at 100 KB; search_people is
-- the sender's and recipients' names and addresses and the attachment
-- names. inbound fills both when it stores a message; 00050 indexes them.
ALTER TABLE messages ADD COLUMN search_body TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN search_people TEXT NOT NULL DEFAULT '';
UPDATE messages SET search_body = substr(COALESCE(text_body, ''), 1, 100000),
    search_people = from_addr || ' ' || COALESCE(from_name, '') || ' ' || to_addrs || ' ' || cc_addrs;

-- +goose Down
ALTER TABLE messages DROP COLUMN search_people;
ALTER TABLE messages DROP COLUMN search_body;
