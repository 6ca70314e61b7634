-- +goose Up
-- Automation runs and their executed steps (internal/automations owns
-- both). A run is at pc (index of its next step in the flattened program
-- of its version) having executed seq steps; each executed step is one row,
-- keyed (run_id, seq), committed with the step's effect and the run's move.
ALTER TABLE automations ADD COLUMN signing_secret TEXT NOT NULL DEFAULT '';

CREATE TABLE automation_runs (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL,
    automation_id TEXT NOT NULL,
    version       INTEGER NOT NULL,
    contact_id    TEXT NOT NULL,
    email         TEXT NOT NULL,
    audience_id   TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL,      -- running, waiting, completed, stopped, failed, cancelled
    trigger_key   TEXT NOT NULL,      -- api:<idempotency_key> or event:<automation event id>
    trigger_data  TEXT NOT NULL,      -- JSON object, {{ trigger.<name> }}
    pc            INTEGER NOT NULL,
    seq           INTEGER NOT NULL,
    emails_sent   INTEGER NOT NULL DEFAULT 0,
    error         TEXT,
    wait_until    BIGINT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    finished_at   BIGINT
);
CREATE UNIQUE INDEX automation_runs_trigger_key ON automation_runs (automation_id, trigger_key);
CREATE INDEX automation_runs_listing ON automation_runs (automation_id, created_at, id);
CREATE INDEX automation_runs_by_status ON automation_runs (automation_id, status, created_at, id);

CREATE TABLE automation_run_steps (
    run_id       TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    workspace_id TEXT NOT NULL,
    step_id      TEXT NOT NULL,
    type         TEXT NOT NULL,
    status       TEXT NOT NULL,       -- completed, skipped, failed, waiting
    outcome      TEXT NOT NULL DEFAULT '',  -- then/else, the exit reason, why a send was skipped
    email_id     TEXT,
    error        TEXT,
    started_at   BIGINT NOT NULL,
    finished_at  BIGINT,
    PRIMARY KEY (run_id, seq)
);

-- +goose Down
DROP TABLE automation_run_steps;
DROP TABLE automation_runs;
ALTER TABLE automations DROP COLUMN signing_secret;
