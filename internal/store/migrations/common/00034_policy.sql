-- +goose Up
-- Sending policy (issue 26; docs/decisions.md, "Sending policy"). Counters,
-- not scans: one row per workspace (subject '') or sending address
-- (subject = the address) and period ('d:2026-11-25' a UTC day,
-- 'm:2026-11' a UTC month). Nodes count in memory and add their share
-- every second; bounces and complaints sit on the workspace's day rows for
-- the reputation rule (last 7 days).
CREATE TABLE policy_counters (
    workspace_id TEXT NOT NULL,
    subject      TEXT NOT NULL,
    period       TEXT NOT NULL,
    sends        BIGINT NOT NULL DEFAULT 0,
    bounces      BIGINT NOT NULL DEFAULT 0,
    complaints   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, subject, period)
);

-- Holds on sending: a paused workspace (kind 'workspace_paused', value ''),
-- an address paused or receive-only ('address_paused',
-- 'address_receive_only', value = the address), a recipient domain the
-- workspace blocks ('blocked_domain', value = the domain). Every node keeps
-- them in memory and reloads them when policy_version moves.
CREATE TABLE policy_holds (
    workspace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    value        TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, kind, value)
);

-- One row; every change of policy_holds adds 1 in the same transaction, so
-- a node polls one small row to learn that the holds moved.
CREATE TABLE policy_version (
    id      INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO policy_version (id, version) VALUES (1, 0);

-- +goose Down
DROP TABLE policy_version;
DROP TABLE policy_holds;
DROP TABLE policy_counters;
