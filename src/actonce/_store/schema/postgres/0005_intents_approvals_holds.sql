-- actonce ledger, PostgreSQL dialect, version 5: intents, approvals, and the
-- holds a gated claim takes (an intent version, an approval, budget draws).

-- One row per intent version; exactly one current version per intent.
CREATE TABLE intents (
    intent_id     TEXT COLLATE "C" NOT NULL,
    version       integer NOT NULL CHECK (version >= 1),
    kind          TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    fields        TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('current', 'superseded')),
    created_at    double precision NOT NULL,
    superseded_at double precision,
    PRIMARY KEY (intent_id, version)
);
CREATE UNIQUE INDEX intents_current ON intents (intent_id) WHERE status = 'current';

-- Approval packets: what a user was asked to approve, exactly. Only an HMAC
-- of a reply code is kept, never the code; signing keys are never stored.
CREATE TABLE approvals (
    packet_id   TEXT PRIMARY KEY,
    intent_id   TEXT NOT NULL,
    version     INTEGER NOT NULL,
    effect_key  TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN (
                    'pending', 'approved', 'denied', 'expired', 'voided',
                    'invalidated', 'held', 'consumed')),
    packet      TEXT NOT NULL,
    code_digest TEXT,
    code_used   INTEGER NOT NULL DEFAULT 0,
    created_at  double precision NOT NULL,
    expires_at  double precision NOT NULL,
    updated_at  double precision NOT NULL
);
CREATE INDEX approvals_by_status ON approvals (status, created_at);
CREATE INDEX approvals_by_intent ON approvals (intent_id, version);
CREATE INDEX approvals_by_user ON approvals (user_id, created_at);

-- What each claim holds, settled with the verdict of its effect.
CREATE TABLE holds (
    key        TEXT NOT NULL,
    fence      INTEGER NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('intent', 'approval', 'budget')),
    ref        TEXT NOT NULL,
    amount     TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('held', 'consumed', 'released')),
    at         double precision NOT NULL,
    settled_at double precision,
    PRIMARY KEY (key, fence, kind, ref)
);
CREATE INDEX holds_by_ref ON holds (kind, ref, status);

-- Wrong reply codes per user, in a sliding window (brute force stops here).
CREATE TABLE code_failures (
    user_id      TEXT PRIMARY KEY,
    window_start double precision NOT NULL,
    failures     INTEGER NOT NULL
);

-- Whether an effect's claim took holds that its verdict settles.
ALTER TABLE effects ADD COLUMN gated integer NOT NULL DEFAULT 0;
