-- +goose Up
-- SQLite only (its full-text index is written by inbound before commit);
-- PostgreSQL's is a generated column.
SELECT 1;

-- +goose Down
SELECT 1;
