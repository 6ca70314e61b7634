-- +goose Up
-- The template version a broadcast's fan-out renders, recorded by its first
-- run, so that a run again after a crash renders the same one even if
-- another was published meanwhile ('' until the fan-out starts, and for
-- broadcasts without a template).
ALTER TABLE broadcasts ADD COLUMN template_version_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE broadcasts DROP COLUMN template_version_id;
