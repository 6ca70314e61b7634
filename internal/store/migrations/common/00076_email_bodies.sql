-- +goose Up
-- Large bodies live apart from their email's row (issue 22): SQLite writes
-- a whole row again at every UPDATE, and an email's status changes two or
-- three times on its way out, so a broadcast's 15 KB body inline wrote about
-- 120 KB per recipient. Rows written before this keep their bodies inline.
CREATE TABLE email_bodies (
    email_id    TEXT PRIMARY KEY,
    html        TEXT,
    text_body   TEXT,
    attachments TEXT NOT NULL DEFAULT '[]'
);

-- +goose Down
DROP TABLE email_bodies;
