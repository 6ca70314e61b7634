-- +goose Up
-- A message's text is stored once (issue 47): search_body is '' when it
-- would repeat text_body, and the index reads text_body then. The FTS5
-- table becomes contentless (contentless_delete: a row is deleted by its
-- rowid alone), its triggers handing it the text to index; excerpts are
-- cut from the same expression (inbound.messageIndex).
DROP TRIGGER messages_search_update;
DROP TRIGGER messages_search_delete;
DROP TRIGGER messages_search_insert;
DROP TABLE messages_search;

UPDATE messages SET search_body = '' WHERE text_body IS NOT NULL AND search_body = text_body;

CREATE VIRTUAL TABLE messages_search USING fts5(
    subject,
    search_people,
    search_body,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

-- +goose StatementBegin
CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_search (rowid, subject, search_people, search_body)
    VALUES (new.rowid, new.subject, new.search_people, CASE WHEN new.search_body = '' THEN COALESCE(new.text_body, '') ELSE new.search_body END);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_search WHERE rowid = old.rowid;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_search_update AFTER UPDATE OF subject, search_people, search_body, text_body ON messages BEGIN
    DELETE FROM messages_search WHERE rowid = old.rowid;
    INSERT INTO messages_search (rowid, subject, search_people, search_body)
    VALUES (new.rowid, new.subject, new.search_people, CASE WHEN new.search_body = '' THEN COALESCE(new.text_body, '') ELSE new.search_body END);
END;
-- +goose StatementEnd

INSERT INTO messages_search (rowid, subject, search_people, search_body)
SELECT rowid, subject, search_people, CASE WHEN search_body = '' THEN COALESCE(text_body, '') ELSE search_body END FROM messages;

-- +goose Down
DROP TRIGGER messages_search_update;
DROP TRIGGER messages_search_delete;
DROP TRIGGER messages_search_insert;
DROP TABLE messages_search;

UPDATE messages SET search_body = text_body WHERE search_body = '' AND text_body IS NOT NULL AND length(CAST(text_body AS BLOB)) <= 100000;

CREATE VIRTUAL TABLE messages_search USING fts5(
    subject,
    search_people,
    search_body,
    content = 'messages',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 0'
);

-- +goose StatementBegin
CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_search (rowid, subject, search_people, search_body) VALUES (new.rowid, new.subject, new.search_people, new.search_body);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_search (messages_search, rowid, subject, search_people, search_body) VALUES ('delete', old.rowid, old.subject, old.search_people, old.search_body);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_search_update AFTER UPDATE OF subject, search_people, search_body ON messages BEGIN
    INSERT INTO messages_search (messages_search, rowid, subject, search_people, search_body) VALUES ('delete', old.rowid, old.subject, old.search_people, old.search_body);
    INSERT INTO messages_search (rowid, subject, search_people, search_body) VALUES (new.rowid, new.subject, new.search_people, new.search_body);
END;
-- +goose StatementEnd

INSERT INTO messages_search (messages_search) VALUES ('rebuild');
