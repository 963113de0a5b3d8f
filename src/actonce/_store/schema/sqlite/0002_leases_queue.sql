-- actonce ledger, SQLite dialect, version 2: operator leases and work hand-out.

-- One row per lease name, kept after release so that the token only grows.
CREATE TABLE leases (
    name         TEXT PRIMARY KEY,
    owner        TEXT NOT NULL,
    token        INTEGER NOT NULL CHECK (token >= 1),
    acquired_at  REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    expires_at   REAL NOT NULL
) WITHOUT ROWID;

-- Intents waiting for a worker. "attempts" is the fencing token of a take.
CREATE TABLE queue (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('queued', 'taken', 'done')),
    taken_by         TEXT,
    lease_expires_at REAL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL
);
-- Hand-out scans only unfinished items, oldest first.
CREATE INDEX queue_open ON queue (id) WHERE status IN ('queued', 'taken');
