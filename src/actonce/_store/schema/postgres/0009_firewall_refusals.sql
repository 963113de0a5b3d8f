-- actonce ledger, PostgreSQL dialect, version 9: the write firewall's refusals.
-- One row per mutating request the firewall of an agent's browser refused
-- (invariant 11): who, what (method, URL without query), from which page,
-- when, why. Never headers, cookies or bodies. Appended, never updated.
CREATE TABLE firewall_refusals (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         DOUBLE PRECISION NOT NULL,
    actor      TEXT NOT NULL,
    method     TEXT NOT NULL,
    url        TEXT NOT NULL,
    page       TEXT NOT NULL,
    reason     TEXT NOT NULL CHECK (reason IN
                   ('outside_effect', 'undeclared', 'out_of_order', 'second', 'other_origin')),
    effect_key TEXT,
    via        TEXT NOT NULL
);
CREATE INDEX firewall_refusals_by_actor ON firewall_refusals (actor, id);
