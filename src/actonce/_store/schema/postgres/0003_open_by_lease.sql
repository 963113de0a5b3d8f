-- actonce ledger, PostgreSQL dialect, version 3.
-- Reconcile reads open effects oldest lease first: index them in that order
-- so the lookup walks the index instead of sorting, however large the history.
DROP INDEX effects_open;
CREATE INDEX effects_open ON effects (lease_expires_at)
    WHERE status IN ('claimed', 'executing', 'unknown');
