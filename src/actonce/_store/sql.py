"""The SQL text the SQLite and PostgreSQL stores share, written once.

Placeholders are ``?`` (SQLite's); :func:`pg` turns a statement into
psycopg's ``%s`` style. Only what really differs stays in a backend: how a
claim or a transition and its event become one atomic write (SQLite: one
``BEGIN IMMEDIATE`` transaction; PostgreSQL: one statement, a CTE) and how
work is handed out (PostgreSQL: ``FOR UPDATE SKIP LOCKED``).
"""

from __future__ import annotations

import functools

from .._rules.model import OPEN_STATUSES
from .rows import EFFECT_COLUMNS, EVENT_COLUMNS, LEASE_COLUMNS, QUEUE_COLUMNS

__all__ = [
    "COLS",
    "COUNTS",
    "DUPLICATES",
    "EVENT",
    "EVENTS",
    "EXTEND",
    "GET",
    "LEASE_ACQUIRE",
    "LEASE_GET",
    "LEASE_RELEASE",
    "LEASE_RENEW",
    "OPEN",
    "PREFIX",
    "QUEUE_COUNTS",
    "QUEUE_DONE",
    "QUEUE_EXTEND",
    "QUEUE_PUT",
    "SET",
    "cas_set",
    "pg",
]


def _marks(n: int) -> str:
    return ", ".join("?" for _ in range(n))


COLS = ", ".join(EFFECT_COLUMNS)
MARKS = _marks(len(EFFECT_COLUMNS))
SET = ", ".join(f"{c} = ?" for c in EFFECT_COLUMNS[1:])
EV_COLS = ", ".join(EVENT_COLUMNS)
_OPEN = ", ".join(f"'{s.value}'" for s in sorted(OPEN_STATUSES))

GET = f"SELECT {COLS} FROM effects WHERE key = ?"
# A release of a new key's claim: the row goes, if it is still that claim.
DELETE = "DELETE FROM effects WHERE key = ? AND status = ? AND fence = ?"
EVENT = f"INSERT INTO events ({EV_COLS}) VALUES ({_marks(len(EVENT_COLUMNS))})"
EVENTS = f"SELECT seq, {EV_COLS} FROM events WHERE key = ? ORDER BY seq"
OPEN = f"SELECT {COLS} FROM effects WHERE status IN ({_OPEN}) ORDER BY lease_expires_at LIMIT ?"
COUNTS = "SELECT status, count(*) FROM effects GROUP BY status"
DUPLICATES = "SELECT count(*) FROM effects WHERE matches > 1"
PREFIX = "SELECT key FROM effects WHERE key >= ? AND key < ? ORDER BY key LIMIT ?"
# A lease extension never shortens the lease; it answers whether the row is
# still this owner's (status and fence unchanged).
EXTEND = (
    "UPDATE effects SET lease_expires_at = CASE WHEN lease_expires_at < ? THEN ? "
    "ELSE lease_expires_at END WHERE key = ? AND status = ? AND fence = ?"
)

_L_COLS = ", ".join(LEASE_COLUMNS)
LEASE_GET = f"SELECT {_L_COLS} FROM leases WHERE name = ?"
LEASE_ACQUIRE = (
    f"INSERT INTO leases ({_L_COLS}) VALUES (?, ?, 1, ?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, token = leases.token + 1, "
    "acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, "
    "expires_at = excluded.expires_at "
    f"WHERE leases.owner = '' OR leases.expires_at <= ? RETURNING {_L_COLS}"
)
LEASE_RENEW = (
    "UPDATE leases SET heartbeat_at = ?, expires_at = ? "
    f"WHERE name = ? AND token = ? AND owner = ? RETURNING {_L_COLS}"
)
LEASE_RELEASE = (
    "UPDATE leases SET owner = '', expires_at = ? WHERE name = ? AND token = ? AND owner = ?"
)

Q_COLS = ", ".join(QUEUE_COLUMNS)
QUEUE_PUT = (
    "INSERT INTO queue (kind, payload, status, created_at, updated_at) "
    "VALUES (?, ?, 'queued', ?, ?) RETURNING id"
)
QUEUE_EXTEND = (
    "UPDATE queue SET lease_expires_at = ?, updated_at = ? "
    "WHERE id = ? AND status = 'taken' AND attempts = ? AND taken_by = ?"
)
QUEUE_DONE = (
    "UPDATE queue SET status = 'done', updated_at = ? "
    "WHERE id = ? AND status = 'taken' AND attempts = ? AND taken_by = ?"
)
QUEUE_COUNTS = "SELECT status, count(*) FROM queue GROUP BY status"


def pg(statement: str) -> str:
    """The statement with psycopg placeholders (no ``?`` appears in SQL text here)."""
    return statement.replace("?", "%s")


_COLUMN_INDEX = {name: i for i, name in enumerate(EFFECT_COLUMNS)}


@functools.cache
def cas_set(fields: tuple[str, ...] | None) -> tuple[str, tuple[int, ...]]:
    """The ``SET`` clause of a compare-and-set of ``fields`` (all when ``None``),
    and the positions of their values in ``record_params``.

    Writing only what changed matters: every column set rewrites the indexes
    that hold it, and the ``executing`` mark's commit is fsynced, so its size
    is paid in full on every effect.
    """
    names = EFFECT_COLUMNS[1:] if fields is None else tuple(dict.fromkeys(fields))
    unknown = [n for n in names if n not in _COLUMN_INDEX or n == "key"]
    if unknown:
        raise ValueError(f"not a column one may set: {unknown}")
    return ", ".join(f"{n} = ?" for n in names), tuple(_COLUMN_INDEX[n] for n in names)
