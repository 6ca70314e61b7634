-- +goose Up
-- The full-text index behind GET /v1/search (issue 23): a tsvector of
-- subject (weight A), search_people (B) and search_body (C) kept by
-- PostgreSQL as a generated column, with a GIN index. ASCII punctuation
-- becomes a space first so that addresses, hosts and hyphenated words
-- split into words as SQLite's unicode61 splits them (the default parser
-- would keep ann@sender.example as one token). 'simple': no stemming and
-- no stop words, like the SQLite twin. store.DB.TextSearch queries it.
ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', regexp_replace(subject, '[!-/:-@[-`{-~]+', ' ', 'g')), 'A') ||
    setweight(to_tsvector('simple', regexp_replace(search_people, '[!-/:-@[-`{-~]+', ' ', 'g')), 'B') ||
    setweight(to_tsvector('simple', regexp_replace(search_body, '[!-/:-@[-`{-~]+', ' ', 'g')), 'C')
) STORED;
CREATE INDEX messages_search ON messages USING gin (search_vector);

-- +goose Down
DROP INDEX messages_search;
ALTER TABLE messages DROP COLUMN search_vector;
