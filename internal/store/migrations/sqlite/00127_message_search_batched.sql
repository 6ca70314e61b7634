-- +goose Up
-- A transaction's new messages enter the full-text index together, by one
-- statement inbound runs before it commits (inbound.indexLater), not by a
-- trigger per row: FTS5 writes its pending entries out as a segment at
-- every statement that changes it. Updates and deletes keep their triggers.
DROP TRIGGER messages_search_insert;

-- +goose Down
-- +goose StatementBegin
CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_search (rowid, subject, search_people, search_body)
    VALUES (new.rowid, new.subject, new.search_people, CASE WHEN new.search_body = '' THEN COALESCE(new.text_body, '') ELSE new.search_body END);
END;
-- +goose StatementEnd
