-- actonce ledger, SQLite dialect, version 7: multi-step operations and receipts.
-- An operation's definition (its steps, their roles and keys); its state is
-- never stored: it is derived from its steps' effects every time.
CREATE TABLE operations (
    op_id      TEXT PRIMARY KEY,
    intent_id  TEXT,
    version    INTEGER,
    spec       TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID;
-- The receipt of a finished (or abandoned) operation: secret-free evidence.
CREATE TABLE receipts (
    op_id      TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    text       TEXT NOT NULL,
    data       TEXT NOT NULL,
    written_at REAL NOT NULL
) WITHOUT ROWID;
