-- +goose Up
-- The trigram index behind GET /v1/contacts?q= (issue 20): a pg_trgm GIN
-- index over contacts.search, which PostgreSQL keeps in the transaction of
-- every contact write. pg_trgm ships with PostgreSQL (contrib) and is a
-- trusted extension: a role with CREATE on the database may create it; on
-- a server where it may not, a superuser runs this line once beforehand.
-- Its schema must be on the role's search_path (gin_trgm_ops is looked up
-- there). store.DB.Contains queries the index.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX contacts_search_trgm ON contacts USING gin (search gin_trgm_ops);

-- +goose Down
DROP INDEX contacts_search_trgm;
