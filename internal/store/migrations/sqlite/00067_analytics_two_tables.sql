-- +goose Up
-- Analytics rollups in two tables instead of three (issue 25): the tag key
-- '' (value '') stands for the email as a whole, so analytics_cells holds
-- what analytics_daily and analytics_tags held, and analytics_days what
-- analytics_tag_days held plus a total per day, which an unfiltered series
-- reads (a row a day instead of one per domain, class and template). Its key
-- puts the value before the day: a breakdown by tag value reads the rows in
-- its GROUP BY's order (no sort), and a series per value is one range.
-- WITHOUT ROWID: the table is its primary key's b-tree, so a read's range
-- scan finds the counters in the key's own row (no second lookup).
CREATE TABLE analytics_cells (
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
) WITHOUT ROWID;

CREATE TABLE analytics_days (
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
    PRIMARY KEY (workspace_id, tag_key, tag_value, day)
) WITHOUT ROWID;

INSERT INTO analytics_cells (workspace_id, tag_key, day, tag_value, domain, mail_class, template_id, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks)
SELECT workspace_id, '', day, '', domain, mail_class, template_id, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks FROM analytics_daily;
INSERT INTO analytics_cells (workspace_id, tag_key, day, tag_value, domain, mail_class, template_id, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks)
SELECT workspace_id, tag_key, day, tag_value, domain, mail_class, template_id, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks FROM analytics_tags WHERE tag_key <> '';
INSERT INTO analytics_days (workspace_id, tag_key, day, tag_value, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks)
SELECT workspace_id, tag_key, day, tag_value, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks FROM analytics_tag_days WHERE tag_key <> '';
INSERT INTO analytics_days (workspace_id, tag_key, day, tag_value, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks)
SELECT workspace_id, '', day, '', SUM(sent), SUM(delivered), SUM(bounced), SUM(complained), SUM(opens), SUM(unique_opens), SUM(clicks), SUM(unique_clicks), SUM(machine_opens), SUM(machine_clicks) FROM analytics_daily GROUP BY workspace_id, day;

DROP TABLE analytics_tag_days;
DROP INDEX analytics_tags_day;
DROP TABLE analytics_tags;
DROP TABLE analytics_daily;

-- +goose Down
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
INSERT INTO analytics_daily (workspace_id, day, domain, mail_class, template_id, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks)
SELECT workspace_id, day, domain, mail_class, template_id, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks FROM analytics_cells WHERE tag_key = '';
INSERT INTO analytics_tags (workspace_id, tag_key, day, tag_value, domain, mail_class, template_id, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks)
SELECT workspace_id, tag_key, day, tag_value, domain, mail_class, template_id, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks FROM analytics_cells WHERE tag_key <> '';
INSERT INTO analytics_tag_days (workspace_id, tag_key, day, tag_value, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks)
SELECT workspace_id, tag_key, day, tag_value, sent, delivered, bounced, complained, opens, unique_opens, clicks, unique_clicks, machine_opens, machine_clicks FROM analytics_days WHERE tag_key <> '';
DROP TABLE analytics_days;
DROP TABLE analytics_cells;
