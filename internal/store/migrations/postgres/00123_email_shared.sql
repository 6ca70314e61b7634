-- +goose Up
-- What many emails share is stored once (issue #47): a broadcast's From,
-- Reply-To, tags and mail class, and the head of its recipients' body
-- sources, are the same for every recipient, and were about 130 bytes of
-- each recipient's email row. An email row with shared_id set stores '' in
-- from_addr, reply_to, tags and mail_class and the rest of its body source
-- in body_source; its reads take them from the email_shared row (sending's
-- sharedJoin). Rows written before, with shared_id NULL, are read as they
-- are.
CREATE TABLE email_shared (
    id            BIGSERIAL PRIMARY KEY,
    workspace_id  TEXT NOT NULL,
    digest        TEXT NOT NULL UNIQUE,
    from_addr     TEXT NOT NULL,
    reply_to      TEXT NOT NULL,
    tags          TEXT NOT NULL,
    source_prefix TEXT NOT NULL,
    mail_class    TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
ALTER TABLE emails ADD COLUMN shared_id BIGINT;

-- +goose Down
UPDATE emails SET from_addr = (SELECT s.from_addr FROM email_shared s WHERE s.id = emails.shared_id),
    reply_to = (SELECT s.reply_to FROM email_shared s WHERE s.id = emails.shared_id),
    tags = (SELECT s.tags FROM email_shared s WHERE s.id = emails.shared_id),
    mail_class = (SELECT s.mail_class FROM email_shared s WHERE s.id = emails.shared_id),
    body_source = CASE WHEN body_source = '' THEN '' ELSE (SELECT s.source_prefix FROM email_shared s WHERE s.id = emails.shared_id) || body_source END
    WHERE shared_id IS NOT NULL;
ALTER TABLE emails DROP COLUMN shared_id;
DROP TABLE email_shared;
