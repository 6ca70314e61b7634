-- +goose Up
-- The trigram index behind GET /v1/contacts?q= (issue 20): an FTS5 table
-- over contacts.search (external content, keyed by the contact's rowid),
-- kept by triggers in the transaction of every contact write. Case
-- sensitive because search is already lowercased: the index then says
-- exactly what instr() says. store.DB.Contains queries it.
CREATE VIRTUAL TABLE contacts_search USING fts5(
    search,
    content = 'contacts',
    content_rowid = 'rowid',
    tokenize = 'trigram case_sensitive 1'
);

-- +goose StatementBegin
CREATE TRIGGER contacts_search_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contacts_search (rowid, search) VALUES (new.rowid, new.search);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER contacts_search_delete AFTER DELETE ON contacts BEGIN
    INSERT INTO contacts_search (contacts_search, rowid, search) VALUES ('delete', old.rowid, old.search);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER contacts_search_update AFTER UPDATE OF search ON contacts WHEN old.search <> new.search BEGIN
    INSERT INTO contacts_search (contacts_search, rowid, search) VALUES ('delete', old.rowid, old.search);
    INSERT INTO contacts_search (rowid, search) VALUES (new.rowid, new.search);
END;
-- +goose StatementEnd

INSERT INTO contacts_search (contacts_search) VALUES ('rebuild');

-- +goose Down
DROP TRIGGER contacts_search_update;
DROP TRIGGER contacts_search_delete;
DROP TRIGGER contacts_search_insert;
DROP TABLE contacts_search;
