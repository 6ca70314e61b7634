-- +goose Up
-- Analytics rollups (issue 25): counters per workspace, UTC day (days since
-- 1970-01-01) and the combination of the single-valued dimensions, bumped in
-- the same transaction as the event they count (internal/analytics). Reads
-- group these rows; they never scan emails. '' is "none" (no template).
CREATE TABLE analytics_daily (
    workspace_id   TEXT NOT NULL,
    day            INTEGER NOT NULL,
    domain         TEXT NOT NULL,
    mail_class     TEXT NOT NULL,
    template_id    TEXT NOT NULL,
    sent           BIGINT NOT NULL DEFAULT 0,
    delivered      BIGINT NOT NULL DEFAULT 0,
    bounced        BIGINT NOT NULL DEFAULT 0,
    complained     BIGINT NOT NULL DEFAULT 0,
    opens          BIGINT NOT NULL DEFAULT 0,
    unique_opens   BIGINT NOT NULL DEFAULT 0,
    clicks         BIGINT NOT NULL DEFAULT 0,
    unique_clicks  BIGINT NOT NULL DEFAULT 0,
    machine_opens  BIGINT NOT NULL DEFAULT 0,
    machine_clicks BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, day, domain, mail_class, template_id)
);

-- The same counters once more per tag (key, value) an email carries, so a
-- tag filter or a tag breakdown reads only its key's rows.
CREATE TABLE analytics_tags (
    workspace_id   TEXT NOT NULL,
    tag_key        TEXT NOT NULL,
    day            INTEGER NOT NULL,
    tag_value      TEXT NOT NULL,
    domain         TEXT NOT NULL,
    mail_class     TEXT NOT NULL,
    template_id    TEXT NOT NULL,
    sent           BIGINT NOT NULL DEFAULT 0,
    delivered      BIGINT NOT NULL DEFAULT 0,
    bounced        BIGINT NOT NULL DEFAULT 0,
    complained     BIGINT NOT NULL DEFAULT 0,
    opens          BIGINT NOT NULL DEFAULT 0,
    unique_opens   BIGINT NOT NULL DEFAULT 0,
    clicks         BIGINT NOT NULL DEFAULT 0,
    unique_clicks  BIGINT NOT NULL DEFAULT 0,
    machine_opens  BIGINT NOT NULL DEFAULT 0,
    machine_clicks BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, tag_key, day, tag_value, domain, mail_class, template_id)
);
CREATE INDEX analytics_tags_day ON analytics_tags (workspace_id, day);

-- The tag rows once more without the other dimensions: a tag breakdown or
-- filter with no domain, class or template filter (the common case) reads
-- a row per day and value here instead of one per combination.
CREATE TABLE analytics_tag_days (
    workspace_id   TEXT NOT NULL,
    tag_key        TEXT NOT NULL,
    day            INTEGER NOT NULL,
    tag_value      TEXT NOT NULL,
    sent           BIGINT NOT NULL DEFAULT 0,
    delivered      BIGINT NOT NULL DEFAULT 0,
    bounced        BIGINT NOT NULL DEFAULT 0,
    complained     BIGINT NOT NULL DEFAULT 0,
    opens          BIGINT NOT NULL DEFAULT 0,
    unique_opens   BIGINT NOT NULL DEFAULT 0,
    clicks         BIGINT NOT NULL DEFAULT 0,
    unique_clicks  BIGINT NOT NULL DEFAULT 0,
    machine_opens  BIGINT NOT NULL DEFAULT 0,
    machine_clicks BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, tag_key, day, tag_value)
);

-- Tracking (issue 25): one row per email sent with track_opens or
-- track_clicks (flags: 1 opens, 2 clicks), written with the email; the
-- email's analytics dimensions ride along so that counting an open needs
-- no other table. Untracked emails have no row.
CREATE TABLE email_tracking (
    email_id       TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL,
    flags          INTEGER NOT NULL,
    domain         TEXT NOT NULL,
    mail_class     TEXT NOT NULL,
    template_id    TEXT NOT NULL,
    tags           TEXT NOT NULL DEFAULT '{}',
    opens          INTEGER NOT NULL DEFAULT 0,
    clicks         INTEGER NOT NULL DEFAULT 0,
    machine_opens  INTEGER NOT NULL DEFAULT 0,
    machine_clicks INTEGER NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL
);

-- +goose Down
DROP TABLE email_tracking;
DROP TABLE analytics_tag_days;
DROP INDEX analytics_tags_day;
DROP TABLE analytics_tags;
DROP TABLE analytics_daily;
