-- +goose Up
-- The full-text index behind GET /v1/search (issue 23): an FTS5 table over
-- subject, search_people and search_body (external content, keyed by the
-- message's rowid), kept by triggers in the transaction of every message
-- write. unicode61 splits on anything but letters and digits and folds
-- case, as PostgreSQL's twin does; diacritics are kept (PostgreSQL's
-- 'simple' configuration keeps them too). store.DB.TextSearch queries it.
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

-- +goose Down
DROP TRIGGER messages_search_update;
DROP TRIGGER messages_search_delete;
DROP TRIGGER messages_search_insert;
DROP TABLE messages_search;
