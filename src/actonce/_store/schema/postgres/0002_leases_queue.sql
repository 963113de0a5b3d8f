-- actonce ledger, PostgreSQL dialect, version 2: operator leases and work hand-out.

-- One row per lease name, kept after release so that the token only grows.
CREATE TABLE leases (
    name         TEXT PRIMARY KEY,
    owner        TEXT NOT NULL,           -- '' once released
    token        BIGINT NOT NULL CHECK (token >= 1),
    acquired_at  DOUBLE PRECISION NOT NULL,
    heartbeat_at DOUBLE PRECISION NOT NULL,
    expires_at   DOUBLE PRECISION NOT NULL
);

-- Intents waiting for a worker. "attempts" is the fencing token of a take.
CREATE TABLE queue (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             TEXT NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('queued', 'taken', 'done')),
    taken_by         TEXT,
    lease_expires_at DOUBLE PRECISION,
    attempts         BIGINT NOT NULL DEFAULT 0,
    created_at       DOUBLE PRECISION NOT NULL,
    updated_at       DOUBLE PRECISION NOT NULL
);
-- Hand-out scans only unfinished items, oldest first.
CREATE INDEX queue_open ON queue (id) WHERE status IN ('queued', 'taken');
