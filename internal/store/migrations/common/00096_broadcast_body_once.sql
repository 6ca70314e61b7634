-- +goose Up
-- A broadcast stores its body once: a recipient's email keeps no html,
-- text or List-Unsubscribe headers, only body_source (the broadcasts
-- area's reference to its recipient row), and is rendered from the
-- broadcast's pinned content at delivery and on read. render_fallbacks pins
-- the contact properties' fallbacks with the template version, so every
-- render of a recipient is the same.
ALTER TABLE emails ADD COLUMN body_source TEXT NOT NULL DEFAULT '';
ALTER TABLE broadcasts ADD COLUMN render_fallbacks TEXT;

-- +goose Down
ALTER TABLE broadcasts DROP COLUMN render_fallbacks;
ALTER TABLE emails DROP COLUMN body_source;
