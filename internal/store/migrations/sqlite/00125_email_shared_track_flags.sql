-- +goose Up
-- A broadcast's emails book no email_tracking row at hand-over (issue #47):
-- most recipients never open or click, and the row was about 200 bytes of
-- each. Their tracking flags are their shared row's (email_shared, whose
-- digest includes them); the tracking area creates an email's row at its
-- first recorded open or click, from the email and its shared row
-- (sending's TrackingBooking). Emails written before keep their rows.
ALTER TABLE email_shared ADD COLUMN track_flags INTEGER NOT NULL DEFAULT 0;

-- +goose Down
-- The emails still without a row get one, as hand-over booked it before.
INSERT INTO email_tracking (email_id, workspace_id, flags, domain, mail_class, template_id, tags, created_at)
    SELECT e.id, e.workspace_id, s.track_flags, lower(rtrim(substr(COALESCE(s.from_addr, ''), instr(COALESCE(s.from_addr, ''), '@') + 1), '> ')),
        s.mail_class, e.template_id, s.tags, e.created_at
    FROM emails e JOIN email_shared s ON s.id = e.shared_id
    WHERE s.track_flags <> 0 AND NOT EXISTS (SELECT 1 FROM email_tracking t WHERE t.email_id = e.id);
ALTER TABLE email_shared DROP COLUMN track_flags;
