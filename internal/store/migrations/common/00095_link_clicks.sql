-- +goose Up
-- Clicks per link of an email (a broadcast's clicked links, the Resend
-- SDKs' broadcasts.clickedLinks): the tracking recorder adds to them in the
-- flush that adds to email_tracking. Machine clicks are kept apart.
CREATE TABLE link_clicks (
    email_id       TEXT NOT NULL,
    url            TEXT NOT NULL,
    workspace_id   TEXT NOT NULL,
    clicks         INTEGER NOT NULL DEFAULT 0,
    machine_clicks INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (email_id, url)
);

-- +goose Down
DROP TABLE link_clicks;
