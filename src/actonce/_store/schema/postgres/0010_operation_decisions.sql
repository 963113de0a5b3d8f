-- actonce ledger, PostgreSQL dialect, version 10: people's decisions about operations.
-- Each decision (retry an undo, undone by hand, accept, abandon, withdraw) is
-- one row, numbered per operation, never updated: who, when, why, and the
-- attempt of the effect in question it was made on. A withdrawal (a revision
-- of the intent, or a person) is the closed-version marker.
CREATE TABLE operation_decisions (
    op_id      TEXT NOT NULL,
    n          INTEGER NOT NULL CHECK (n >= 1),
    decision   TEXT NOT NULL CHECK (decision IN (
                   'retry_undo', 'undone_by_hand', 'accept', 'abandon', 'withdraw')),
    step       TEXT,
    attempt    INTEGER NOT NULL,
    decided_by TEXT NOT NULL,
    at         double precision NOT NULL,
    reason     TEXT NOT NULL,
    PRIMARY KEY (op_id, n)
);
-- When an operation next has work nobody else starts (a notification to send
-- again after its backoff, an undo a withdrawal queued): the operator loop
-- and reconcile look here. NULL: nothing is due.
ALTER TABLE operations ADD COLUMN due_at double precision;
CREATE INDEX operations_due ON operations (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX operations_by_intent ON operations (intent_id, version);
-- Which operation an effect is a step (or an undo) of: one lookup instead of a
-- scan of every definition (a reconcile pass and a decision on a step keep
-- their operation's receipt true). Filled from the definitions on record.
CREATE TABLE operation_steps (
    key   TEXT PRIMARY KEY,
    op_id TEXT NOT NULL
);
INSERT INTO operation_steps (key, op_id)
    SELECT DISTINCT ON (k.key) k.key, k.op_id FROM (
        SELECT s->>'key' AS key, o.op_id, o.created_at
            FROM operations o, jsonb_array_elements(o.spec::jsonb -> 'steps') s
        UNION ALL
        SELECT s->>'undo', o.op_id, o.created_at
            FROM operations o, jsonb_array_elements(o.spec::jsonb -> 'steps') s
    ) k WHERE k.key IS NOT NULL ORDER BY k.key, k.created_at DESC, k.op_id DESC;
-- The review queue reads the operations a receipt last left in review.
CREATE INDEX receipts_by_state ON receipts (state, written_at);
