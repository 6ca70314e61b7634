-- +goose Up
-- Sending domains. verification_status is pending, verified or failed (a
-- verified domain whose required records stayed missing through several
-- nightly checks). shared = 1 marks the workspace's own subdomain of the
-- service domain, verified by definition. record_status is a JSON object
-- "RECORD|name|value" -> status from the last check, so records rebuilt from
-- the current configuration keep what was seen for unchanged values.
CREATE TABLE domains (
    id                  TEXT PRIMARY KEY,
    workspace_id        TEXT NOT NULL,
    domain              TEXT NOT NULL,
    verification_status TEXT NOT NULL,
    shared              INTEGER NOT NULL DEFAULT 0,
    ownership_token     TEXT NOT NULL,
    tracking_host       TEXT,
    record_status       TEXT NOT NULL DEFAULT '{}',
    check_failures      INTEGER NOT NULL DEFAULT 0,
    checked_at          BIGINT,
    verified_at         BIGINT,
    created_at          BIGINT NOT NULL,
    UNIQUE (workspace_id, domain)
);
-- One workspace at a time may hold a domain verified; the index settles
-- races between workspaces verifying the same name on different nodes.
CREATE UNIQUE INDEX domains_verified_once ON domains (domain) WHERE verification_status = 'verified';
CREATE UNIQUE INDEX domains_shared_once ON domains (workspace_id) WHERE shared = 1;
CREATE INDEX domains_workspace_created ON domains (workspace_id, created_at, id);

-- DKIM keys, three selectors per domain; private_key is the PEM sealed with
-- MAILROOM_SECRET_KEY and never leaves the service.
CREATE TABLE domain_keys (
    domain_id    TEXT NOT NULL,
    selector     TEXT NOT NULL,
    private_key  TEXT NOT NULL,
    public_value TEXT NOT NULL,
    active       INTEGER NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (domain_id, selector)
);

-- The service domain's own DKIM key (sandbox sender and test addresses),
-- generated once by whichever node needs it first.
CREATE TABLE service_keys (
    domain       TEXT PRIMARY KEY,
    selector     TEXT NOT NULL,
    private_key  TEXT NOT NULL,
    public_value TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);

-- Minimal mailboxes table so that domain deletion can refuse domains in
-- use; the inbound side adds its own columns.
CREATE TABLE mailboxes (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    domain_id    TEXT NOT NULL,
    address      TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX mailboxes_domain ON mailboxes (domain_id);

-- +goose Down
DROP TABLE mailboxes;
DROP TABLE service_keys;
DROP TABLE domain_keys;
DROP TABLE domains;
