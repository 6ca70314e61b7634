-- +goose Up
-- A received message's text and html bodies, kept in messages.text_body
-- and html_body, are cut out of its raw copy where they stand in it byte
-- for byte, and put back when the copy is read (inbound's rawCopy):
-- text_at is where the text goes back, html_at where the html goes back
-- into the copy without its text; NULL for a body not cut. Issue #47: the
-- text was a tenth of what receiving wrote.
ALTER TABLE message_raw ADD COLUMN text_at INTEGER;
ALTER TABLE message_raw ADD COLUMN html_at INTEGER;

-- +goose Down
-- The html and then the text put back (|| on blobs joins their bytes; the
-- CAST keeps a BLOB).
UPDATE message_raw SET data = CAST(substr(data, 1, html_at)
        || CAST((SELECT m.html_body FROM messages m WHERE m.id = message_raw.message_id) AS BLOB)
        || substr(data, html_at + 1) AS BLOB)
    WHERE html_at IS NOT NULL;
UPDATE message_raw SET data = CAST(substr(data, 1, text_at)
        || CAST((SELECT m.text_body FROM messages m WHERE m.id = message_raw.message_id) AS BLOB)
        || substr(data, text_at + 1) AS BLOB)
    WHERE text_at IS NOT NULL;
ALTER TABLE message_raw DROP COLUMN html_at;
ALTER TABLE message_raw DROP COLUMN text_at;
