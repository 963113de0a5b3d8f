-- actonce ledger, SQLite dialect, version 1.
CREATE TABLE actonce_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

INSERT INTO actonce_meta (name, value) VALUES ('salt', lower(hex(randomblob(32))));

-- Current state: one row per effect key.
CREATE TABLE effects (
    key              TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN (
                         'claimed', 'executing', 'unknown', 'needs_review',
                         'confirmed', 'failed', 'abandoned')),
    fence            INTEGER NOT NULL CHECK (fence >= 1),
    owner            TEXT NOT NULL,
    lease_expires_at REAL NOT NULL,
    payload          TEXT NOT NULL,
    payload_hash     TEXT NOT NULL,
    scope            TEXT NOT NULL,
    result_ref       TEXT,
    reason           TEXT,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL,
    executing_at     REAL
) WITHOUT ROWID;

-- Reconcile looks only at open effects: keep that lookup independent of history size.
CREATE INDEX effects_open ON effects (status, lease_expires_at)
    WHERE status IN ('claimed', 'executing', 'unknown');
CREATE INDEX effects_by_status ON effects (status, updated_at);

-- Append-only history. Never updated, never deleted.
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    key         TEXT NOT NULL,
    type        TEXT NOT NULL,
    at          REAL NOT NULL,
    fence       INTEGER NOT NULL,
    run_id      TEXT NOT NULL,
    from_status TEXT,
    to_status   TEXT,
    message     TEXT,
    data        TEXT
);
CREATE INDEX events_by_key ON events (key, seq);

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
