-- actonce ledger, SQLite dialect, version 3.
-- Reconcile reads the open effects, oldest lease first. A partial index in
-- that order which also carries every column answers the lookup from the
-- index alone: no sort and no table lookups, however large the history. It
-- holds only open rows, so it stays small.
DROP INDEX effects_open;
CREATE INDEX effects_open ON effects (
    lease_expires_at, key, kind, status, fence, owner, payload, payload_hash, scope,
    result_ref, reason, created_at, updated_at, executing_at
) WHERE status IN ('claimed', 'executing', 'unknown');
