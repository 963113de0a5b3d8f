-- actonce ledger, PostgreSQL dialect, version 1.
-- Unqualified names: the store sets search_path to its schema first.
CREATE TABLE actonce_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- 32 random bytes, hex: two v4 UUIDs come from the server's strong random source.
INSERT INTO actonce_meta (name, value) VALUES (
    'salt',
    replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
);

-- Current state: one row per effect key.
CREATE TABLE effects (
    key              TEXT COLLATE "C" PRIMARY KEY,  -- bytewise, like SQLite: prefix ranges stay exact
    kind             TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN (
                         'claimed', 'executing', 'unknown', 'needs_review',
                         'confirmed', 'failed', 'abandoned')),
    fence            BIGINT NOT NULL CHECK (fence >= 1),
    owner            TEXT NOT NULL,
    lease_expires_at DOUBLE PRECISION NOT NULL,
    payload          TEXT NOT NULL,
    payload_hash     TEXT NOT NULL,
    scope            TEXT NOT NULL,
    result_ref       TEXT,
    reason           TEXT,
    created_at       DOUBLE PRECISION NOT NULL,
    updated_at       DOUBLE PRECISION NOT NULL,
    executing_at     DOUBLE PRECISION
);

-- Reconcile looks only at open effects: keep that lookup independent of history size.
CREATE INDEX effects_open ON effects (status, lease_expires_at)
    WHERE status IN ('claimed', 'executing', 'unknown');
CREATE INDEX effects_by_status ON effects (status, updated_at);

-- Append-only history. Never updated, never deleted.
CREATE TABLE events (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key         TEXT COLLATE "C" NOT NULL,
    type        TEXT NOT NULL,
    at          DOUBLE PRECISION NOT NULL,
    fence       BIGINT NOT NULL,
    run_id      TEXT NOT NULL,
    from_status TEXT,
    to_status   TEXT,
    message     TEXT,
    data        TEXT
);
CREATE INDEX events_by_key ON events (key, seq);

CREATE FUNCTION actonce_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only';
END;
$$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION actonce_events_append_only();
