-- +goose Up
-- Issue 28: an endpoint may also receive Svix-style signature headers
-- (webhook-id/-timestamp/-signature and svix-*), so a Resend receiver's
-- verify works; off by default (0).
ALTER TABLE webhooks ADD COLUMN svix_signatures INTEGER NOT NULL DEFAULT 0;
