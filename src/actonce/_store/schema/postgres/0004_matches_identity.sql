-- actonce ledger, PostgreSQL dialect, version 4.
-- How many results the verdict that settled an effect saw (more than one:
-- a duplicate was detected), a random identity for the ledger itself, and no
-- fingerprint salt beside the fingerprints any more (the key lives outside
-- the ledger now: see actonce._rules.secrets).
ALTER TABLE effects ADD COLUMN matches integer NOT NULL DEFAULT 0;
INSERT INTO actonce_meta (name, value) VALUES ('ledger_id', replace(gen_random_uuid()::text, '-', ''))
    ON CONFLICT (name) DO NOTHING;
DELETE FROM actonce_meta WHERE name = 'salt';
