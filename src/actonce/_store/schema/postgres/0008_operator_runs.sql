-- actonce ledger, PostgreSQL dialect, version 7: operator run summaries.
-- One row per operator run (seed 000, "A complete run"): how it ended and
-- what it did, in the failure taxonomy, as JSON. Written once, never updated.
CREATE TABLE operator_runs (
    run_id     TEXT PRIMARY KEY,
    operator   TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('completed', 'hard_stop', 'locked_skip')),
    started_at double precision NOT NULL,
    ended_at   double precision NOT NULL,
    summary    TEXT NOT NULL
);
CREATE INDEX operator_runs_by_operator ON operator_runs (operator, ended_at);
CREATE INDEX operator_runs_by_end ON operator_runs (ended_at);
