-- +goose Up
-- A dashboard sign-in link's session key: kept apart from the keys people
-- made (GET /v1/api-keys leaves it out) and revoked when its session ends.
ALTER TABLE api_keys ADD COLUMN session INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN session;
