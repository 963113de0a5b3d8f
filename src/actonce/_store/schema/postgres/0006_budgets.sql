-- actonce ledger, PostgreSQL dialect, version 6: budget pools.
-- A pool's limit, unit and window; its reservations are holds of kind
-- 'budget' (see 0005), counted in the window they were made in.
CREATE TABLE pools (
    name       TEXT PRIMARY KEY,
    pool       TEXT NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
);
CREATE INDEX holds_budget_window ON holds (ref, at) WHERE kind = 'budget';
