-- +goose Up
-- Dedicated IPs (issue 26): an address of the operator's inventory
-- (MAILROOM_IPS) taken by one workspace. ip is unique: one owner at a time;
-- DELETE hands it back (the row goes). daily_cap NULL = the warm-up
-- allowance alone; warm-up day 1 is the day it was taken (created_at).
CREATE TABLE ips (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    ip           TEXT NOT NULL,
    paused       INTEGER NOT NULL DEFAULT 0,
    daily_cap    BIGINT,
    created_at   BIGINT NOT NULL
);
CREATE UNIQUE INDEX ips_ip ON ips (ip);
CREATE INDEX ips_workspace ON ips (workspace_id, created_at);

-- +goose Down
DROP TABLE ips;
