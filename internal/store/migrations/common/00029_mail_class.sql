-- +goose Up
-- mail_class tells marketing mail (broadcasts) from transactional sends:
-- analytics and policy read it; delivery runs each class on its own lane.
ALTER TABLE emails ADD COLUMN mail_class TEXT NOT NULL DEFAULT 'transactional';

-- +goose Down
ALTER TABLE emails DROP COLUMN mail_class;
