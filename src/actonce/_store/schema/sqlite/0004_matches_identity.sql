-- actonce ledger, SQLite dialect, version 4.
-- How many results the verdict that settled an effect saw (more than one:
-- a duplicate was detected), a random identity for the ledger itself, and no
-- fingerprint salt beside the fingerprints any more (the key lives outside
-- the ledger now: see actonce._rules.secrets).
ALTER TABLE effects ADD COLUMN matches INTEGER NOT NULL DEFAULT 0;
DROP INDEX effects_open;
CREATE INDEX effects_open ON effects (
    lease_expires_at, key, kind, status, fence, owner, payload, payload_hash, scope,
    result_ref, reason, created_at, updated_at, executing_at, matches
) WHERE status IN ('claimed', 'executing', 'unknown');
INSERT INTO actonce_meta (name, value) VALUES ('ledger_id', lower(hex(randomblob(16))))
    ON CONFLICT (name) DO NOTHING;
DELETE FROM actonce_meta WHERE name = 'salt';
