-- +goose Up
-- Issue 28: a key may be restricted to sending from one domain (Resend's
-- sending_access with domain_id); the name is kept beside the id so the
-- send path compares without reading the domain.
ALTER TABLE api_keys ADD COLUMN domain_id TEXT;
ALTER TABLE api_keys ADD COLUMN domain_name TEXT;
