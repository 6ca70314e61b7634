-- +goose Up
-- Contact properties (the Resend SDKs' contactProperties): a declared
-- attribute name with a type (string or number) and a fallback that a
-- broadcast renders for a contact lacking the attribute. fallback is the
-- value's text (a number's JSON spelling), NULL for none. The values stay
-- in contacts.attributes; removing a property leaves them there.
CREATE TABLE contact_properties (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    prop_key     TEXT NOT NULL,
    prop_type    TEXT NOT NULL,
    fallback     TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE UNIQUE INDEX contact_properties_workspace_key ON contact_properties (workspace_id, prop_key);

-- +goose Down
DROP TABLE contact_properties;
