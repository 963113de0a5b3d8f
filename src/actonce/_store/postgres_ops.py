"""The PostgreSQL primitives, written once as generators of statements.

Each primitive yields the statements it needs (:class:`Stmt`) and receives
each answer (rowcount, rows); the sync and the async store in
:mod:`actonce._store.postgres` run them on their pools. Every write is **one
statement** on an autocommit connection, so the statement is its own
transaction: a claim is ``INSERT ... ON CONFLICT DO NOTHING`` and a
transition an ``UPDATE`` compare-and-set on ``(status, fence)``, each chained
by a CTE to the ``INSERT`` of its event, so the state change and its event
commit together or not at all, in one round trip. A lost race costs one more
read (the winner, returned as a value).

Errors are translated at the boundary (:func:`translate`). A write that
fails because the connection broke or the server was told to stop
(``OperationalError``/``InterfaceError`` with SQLSTATE class 08, 57, 58, XX,
or no SQLSTATE at all) may have committed: :class:`LedgerOutcomeUnknown`.
A value the ledger cannot hold (refused on the client before anything was
sent: a NUL in a text, a character the encoding lacks; or by the server as
a data exception, SQLSTATE class 22, or past a limit, class 54: a btree
entry over 2.7 kB) is the caller's to fix, and trying again will not help:
:class:`UsageError`. Any other server error, any read error, and a
connection that could not be had: :class:`LedgerUnavailable`.
"""

from __future__ import annotations

from typing import Any, TypeVar

import psycopg

from .._rules.errors import ActOnceError, LedgerOutcomeUnknown, LedgerUnavailable, UsageError
from .._rules.holds import Gate, Settle
from .._rules.model import EffectRecord, Event, Status
from . import gated_ops
from . import sql as q
from .base import Expect
from .records import ClaimResult, ItemStatus, LeaseRecord, LeaseResult, QueueItem
from .rows import (
    EVENT_COLUMNS,
    QUEUE_COLUMNS,
    event_from_row,
    event_params,
    item_from_row,
    lease_from_row,
    record_from_row,
    record_params,
)
from .stmts import Answer, Stmt, Work

__all__ = ["Answer", "Stmt", "Work", "claim_gated", "pg", "transition_settled", "translate"]

T = TypeVar("T")

# Typed, because a CTE's SELECT list gives untyped parameters no column to infer from.
_EV_TYPED = (
    "%s::text, %s::text, %s::float8, %s::bigint, %s::text, %s::text, %s::text, %s::text, %s::text"
)
assert len(EVENT_COLUMNS) == _EV_TYPED.count("%s")

CLAIM_INSERT = (
    f"WITH won AS (INSERT INTO effects ({q.COLS}) VALUES ({q.pg(q.MARKS)}) "
    "ON CONFLICT (key) DO NOTHING RETURNING key) "
    f"INSERT INTO events ({q.EV_COLS}) SELECT {_EV_TYPED} FROM won"
)
CAS = (
    f"WITH won AS (UPDATE effects SET {q.pg(q.SET)} WHERE key = %s AND status = %s "
    "AND fence = %s RETURNING key) "
    f"INSERT INTO events ({q.EV_COLS}) SELECT {_EV_TYPED} FROM won"
)
# The CTE is always materialised, so its rows are locked once; SKIP LOCKED
# lets concurrent takers pass each other's rows instead of queueing on them.
QUEUE_TAKE = (
    "WITH picked AS (SELECT id FROM queue WHERE status IN ('queued', 'taken') "
    "AND (status = 'queued' OR lease_expires_at <= %s) ORDER BY id LIMIT %s "
    "FOR UPDATE SKIP LOCKED) "
    "UPDATE queue SET status = 'taken', taken_by = %s, lease_expires_at = %s, "
    "attempts = queue.attempts + 1, updated_at = %s FROM picked WHERE queue.id = picked.id "
    f"RETURNING {', '.join('queue.' + c for c in QUEUE_COLUMNS)}"
)
SERVER_TIME = "SELECT extract(epoch FROM clock_timestamp())::float8"
GET, EVENT, EVENTS, OPEN = q.pg(q.GET), q.pg(q.EVENT), q.pg(q.EVENTS), q.pg(q.OPEN)
PREFIX, EXTEND = q.pg(q.PREFIX), q.pg(q.EXTEND)
LEASE_GET, LEASE_ACQUIRE = q.pg(q.LEASE_GET), q.pg(q.LEASE_ACQUIRE)
LEASE_RENEW, LEASE_RELEASE = q.pg(q.LEASE_RENEW), q.pg(q.LEASE_RELEASE)
QUEUE_PUT, QUEUE_EXTEND, QUEUE_DONE = q.pg(q.QUEUE_PUT), q.pg(q.QUEUE_EXTEND), q.pg(q.QUEUE_DONE)

# SQLSTATE classes after which a write may have committed: connection
# exception, operator intervention (pg_terminate_backend), system error.
_MAYBE_COMMITTED = frozenset({"08", "57", "58", "XX"})
# SQLSTATE classes of a value the ledger cannot hold: data exception,
# program limit exceeded (an index entry too large). The statement failed,
# so nothing committed.
_REFUSED_VALUE = frozenset({"22", "54"})


def read_one(sql_text: str, params: tuple[Any, ...] = ()) -> Work[tuple[Any, ...] | None]:
    _, rows = yield Stmt(sql_text, params)
    return rows[0] if rows else None


def get(key: str) -> Work[EffectRecord | None]:
    row = yield from read_one(GET, (key,))
    return None if row is None else record_from_row(row)


def match_prefix(prefix: str, limit: int = 2) -> Work[list[str]]:
    _, rows = yield Stmt(PREFIX, (prefix, prefix + "\U0010ffff", limit))
    return [str(r[0]) for r in rows]


def _cas_params(new: EffectRecord, expect: tuple[Status, int]) -> tuple[Any, ...]:
    return (*record_params(new)[1:], new.key, expect[0].value, expect[1])


def claim(
    new: EffectRecord, expect: Expect, event: Event, *, durable: bool = False
) -> Work[ClaimResult]:
    # Every PostgreSQL commit is durable (synchronous_commit): ``durable`` is moot.
    if expect is None:
        stmt = Stmt(CLAIM_INSERT, (*record_params(new), *event_params(event)), True)
    else:
        stmt = Stmt(CAS, (*_cas_params(new, expect), *event_params(event)), True)
    won, _ = yield stmt
    if won == 1:
        return ClaimResult(True, new)
    # ``None``: the row was released (deleted) between the insert and this read.
    current = yield from get(new.key)
    return ClaimResult(False, current)


RELEASE_DELETE = (
    "WITH won AS (DELETE FROM effects WHERE key = %s AND status = %s AND fence = %s "
    f"RETURNING key) INSERT INTO events ({q.EV_COLS}) SELECT {_EV_TYPED} FROM won"
)


def release(
    key: str, expect: tuple[Status, int], restore: EffectRecord | None, event: Event
) -> Work[bool]:
    """Give back an unperformed claim: the row it replaced, or no row (one event)."""
    if restore is None:
        stmt = Stmt(RELEASE_DELETE, (key, expect[0].value, expect[1], *event_params(event)), True)
    else:
        stmt = Stmt(CAS, (*_cas_params(restore, expect), *event_params(event)), True)
    won, _ = yield stmt
    return bool(won == 1)


def transition(
    expect: tuple[Status, int],
    new: EffectRecord,
    event: Event,
    *,
    durable: bool = False,
    fields: tuple[str, ...] | None = None,
) -> Work[EffectRecord | None]:
    if fields is None:
        stmt = Stmt(CAS, (*_cas_params(new, expect), *event_params(event)), True)
    else:
        clause, positions = q.cas_set(fields)
        values = record_params(new)
        stmt = Stmt(
            f"WITH won AS (UPDATE effects SET {q.pg(clause)} WHERE key = %s AND status = %s "
            f"AND fence = %s RETURNING key) INSERT INTO events ({q.EV_COLS}) "
            f"SELECT {_EV_TYPED} FROM won",
            (*(values[i] for i in positions), new.key, expect[0].value, expect[1],
             *event_params(event)),
            True,
        )  # fmt: skip
    won, _ = yield stmt
    return new if won == 1 else None


def pg(work: Work[T]) -> Work[T]:
    """Statement work written with ``?`` placeholders, run on PostgreSQL.

    Placeholders become ``%s``; a locking read gets ``FOR UPDATE``.
    """
    answer: Any = None
    while True:
        try:
            stmt = work.send(answer)
        except StopIteration as stop:
            result: T = stop.value
            return result
        text = q.pg(stmt.sql) + (" FOR UPDATE" if stmt.lock else "")
        answer = yield Stmt(text, stmt.params, stmt.write)


def claim_gated(new: EffectRecord, expect: Expect, event: Event, gate: Gate) -> Work[ClaimResult]:
    """A claim whose gate is checked and held in the same transaction (run in one)."""
    refusal = yield from pg(gated_ops.check_gate(gate, new.key, expect, new.updated_at))
    if refusal is not None:
        current = yield from get(new.key)
        return ClaimResult(False, current, refusal)
    result = yield from claim(new, expect, event)
    if result.acquired:
        yield from pg(gated_ops.take_holds(gate, new.key, new.fence, new.updated_at, event.run_id))
    return result


def transition_settled(
    expect: tuple[Status, int],
    new: EffectRecord,
    event: Event,
    how: Settle,
    fields: tuple[str, ...] | None = None,
) -> Work[EffectRecord | None]:
    """A transition that settles its effect's holds (run in one transaction)."""
    got = yield from transition(expect, new, event, fields=fields)
    if got is not None:
        yield from pg(gated_ops.settle(new.key, expect[1], how, new.updated_at, event.run_id))
    return got


def extend(key: str, expect: tuple[Status, int], lease_expires_at: float) -> Work[bool]:
    params = (lease_expires_at, lease_expires_at, key, expect[0].value, expect[1])
    done, _ = yield Stmt(EXTEND, params, True)
    return done == 1


def append_event(event: Event) -> Work[None]:
    yield Stmt(EVENT, event_params(event), True)


def events(key: str) -> Work[list[Event]]:
    _, rows = yield Stmt(EVENTS, (key,))
    return [event_from_row(int(r[0]), r[1:]) for r in rows]


def open_effects(limit: int = 1000) -> Work[list[EffectRecord]]:
    _, rows = yield Stmt(OPEN, (limit,))
    return [record_from_row(r) for r in rows]


def duplicates() -> Work[int]:
    row = yield from read_one(q.DUPLICATES)
    return 0 if row is None else int(row[0])


def server_time() -> Work[float]:
    row = yield from read_one(SERVER_TIME)
    assert row is not None
    return float(row[0])


def lease_acquire(name: str, owner: str, now: float, expires_at: float) -> Work[LeaseResult]:
    _, rows = yield Stmt(LEASE_ACQUIRE, (name, owner, now, now, expires_at, now), True)
    if rows:
        return LeaseResult(True, lease_from_row(rows[0]))
    held = yield from read_one(LEASE_GET, (name,))
    if held is None:  # pragma: no cover - lease rows are never deleted
        raise LedgerUnavailable(f"lease {name!r} vanished during an acquisition")
    return LeaseResult(False, lease_from_row(held))


def lease_renew(
    name: str, token: int, owner: str, now: float, expires_at: float
) -> Work[LeaseRecord | None]:
    _, rows = yield Stmt(LEASE_RENEW, (now, expires_at, name, token, owner), True)
    return lease_from_row(rows[0]) if rows else None


def lease_release(name: str, token: int, owner: str, now: float) -> Work[bool]:
    done, _ = yield Stmt(LEASE_RELEASE, (now, name, token, owner), True)
    return done == 1


def lease_get(name: str) -> Work[LeaseRecord | None]:
    row = yield from read_one(LEASE_GET, (name,))
    return None if row is None else lease_from_row(row)


def queue_put(kind: str, payload: str, now: float) -> Work[int]:
    _, rows = yield Stmt(QUEUE_PUT, (kind, payload, now, now), True)
    return int(rows[0][0])


def queue_take(
    worker: str, now: float, lease_expires_at: float, limit: int = 1
) -> Work[list[QueueItem]]:
    params = (now, limit, worker, lease_expires_at, now)
    _, rows = yield Stmt(QUEUE_TAKE, params, True)
    return sorted((item_from_row(r) for r in rows), key=lambda i: i.id)


def queue_extend(
    item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
) -> Work[bool]:
    done, _ = yield Stmt(QUEUE_EXTEND, (lease_expires_at, now, item_id, attempt, worker), True)
    return done == 1


def queue_done(item_id: int, attempt: int, worker: str, now: float) -> Work[bool]:
    done, _ = yield Stmt(QUEUE_DONE, (now, item_id, attempt, worker), True)
    return done == 1


def queue_counts() -> Work[dict[str, int]]:
    _, rows = yield Stmt(q.QUEUE_COUNTS)
    out = {s.value: 0 for s in ItemStatus}
    out.update({str(r[0]): int(r[1]) for r in rows})
    return out


def translate(exc: Exception, stmt: Stmt) -> ActOnceError:
    """A driver error as actonce's: may the write have committed? Is it the caller's?"""
    what = "write" if stmt.write else "read"
    text = _first_line(exc)
    if not isinstance(exc, psycopg.Error) or (
        exc.sqlstate is None and isinstance(exc, psycopg.DataError)
    ):
        # Refused while adapting a value (an encoding error, a NUL): nothing was sent.
        return UsageError(
            f"the ledger cannot hold a value of this {what} (nothing was sent): {text}"
        )
    state = exc.sqlstate
    if state is not None and state[:2] in _REFUSED_VALUE:
        return UsageError(f"the ledger refused a value (nothing was written): {text}")
    broken = isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    if stmt.write and (
        (state is None and broken) or (state is not None and state[:2] in _MAYBE_COMMITTED)
    ):
        return LedgerOutcomeUnknown(f"ledger write may or may not have committed: {text}")
    return LedgerUnavailable(f"ledger {what} failed: {text}")


def _first_line(exc: Exception) -> str:
    # The server's DETAIL and HINT lines follow the message: one line is enough.
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def closed(stmt: Stmt) -> LedgerUnavailable:
    """Nothing was sent on a connection known to be closed: surely not committed."""
    return LedgerUnavailable(
        f"ledger connection closed before the {'write' if stmt.write else 'read'}"
    )
