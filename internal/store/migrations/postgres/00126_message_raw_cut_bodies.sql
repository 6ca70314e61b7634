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
UPDATE message_raw r SET data = substring(r.data FROM 1 FOR r.html_at) || convert_to(m.html_body, 'UTF8') || substring(r.data FROM r.html_at + 1)
    FROM messages m WHERE m.id = r.message_id AND r.html_at IS NOT NULL;
UPDATE message_raw r SET data = substring(r.data FROM 1 FOR r.text_at) || convert_to(m.text_body, 'UTF8') || substring(r.data FROM r.text_at + 1)
    FROM messages m WHERE m.id = r.message_id AND r.text_at IS NOT NULL;
ALTER TABLE message_raw DROP COLUMN html_at;
ALTER TABLE message_raw DROP COLUMN text_at;
