-- +goose Up
-- A message's text is stored once (issue 47): search_body is '' when it
-- would repeat text_body, and the search vector reads text_body then;
-- excerpts are cut from the same expression (inbound.messageIndex).
DROP INDEX messages_search;
ALTER TABLE messages DROP COLUMN search_vector;
UPDATE messages SET search_body = '' WHERE text_body IS NOT NULL AND search_body = text_body;
ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', regexp_replace(subject, '[!-/:-@[-`{-~]+', ' ', 'g')), 'A') ||
    setweight(to_tsvector('simple', regexp_replace(search_people, '[!-/:-@[-`{-~]+', ' ', 'g')), 'B') ||
    setweight(to_tsvector('simple', regexp_replace(CASE WHEN search_body = '' THEN COALESCE(text_body, '') ELSE search_body END, '[!-/:-@[-`{-~]+', ' ', 'g')), 'C')
) STORED;
CREATE INDEX messages_search ON messages USING gin (search_vector);

-- +goose Down
DROP INDEX messages_search;
ALTER TABLE messages DROP COLUMN search_vector;
UPDATE messages SET search_body = text_body WHERE search_body = '' AND text_body IS NOT NULL AND octet_length(text_body) <= 100000;
ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', regexp_replace(subject, '[!-/:-@[-`{-~]+', ' ', 'g')), 'A') ||
    setweight(to_tsvector('simple', regexp_replace(search_people, '[!-/:-@[-`{-~]+', ' ', 'g')), 'B') ||
    setweight(to_tsvector('simple', regexp_replace(search_body, '[!-/:-@[-`{-~]+', ' ', 'g')), 'C')
) STORED;
CREATE INDEX messages_search ON messages USING gin (search_vector);
