"""The shared ledger: PostgreSQL, for many workers on many machines.

Theory of operation. Every primitive is written once, as a generator that
yields the statements it needs (:class:`_Stmt`) and receives each answer
(rowcount, rows); :class:`PostgresStore` runs them on a ``psycopg_pool``
connection, :class:`AsyncPostgresStore` awaits them on an async pool. The
SQL text is one set of module constants.

Every write is **one statement** on an autocommit connection, so the
statement is its own transaction: a claim is ``INSERT ... ON CONFLICT DO
NOTHING`` and a transition an ``UPDATE`` compare-and-set on ``(status,
fence)``, each chained by a CTE to the ``INSERT`` of its event, so the state
change and its event commit together or not at all, in one round trip. A
lost race costs one more read (the winner, returned as a value).

Errors are translated at the boundary. A write that fails because the
connection broke or the server was told to stop (SQLSTATE classes 08, 57,
58, XX, or no SQLSTATE at all) may have committed:
:class:`LedgerOutcomeUnknown`. Any other server error, any read error, and
a connection that could not be had: :class:`LedgerUnavailable`.

Migrations (``migrations/postgres``) run when a store opens, inside one
transaction that holds ``pg_advisory_xact_lock``: concurrent openers wait
for each other, and a schema newer than this code raises
:class:`SchemaTooNew`. ``?schema=name`` in the URL keeps the ledger in its
own schema (created if needed) through the connection's ``search_path``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from . import _migrations
from ._errors import BadLedgerURL, LedgerOutcomeUnknown, LedgerUnavailable
from ._leases import LEASE_COLUMNS, LeaseRecord, LeaseResult, lease_from_row
from ._model import OPEN_STATUSES, EffectRecord, Event, Status
from ._queue import QUEUE_COLUMNS, ItemStatus, QueueItem, item_from_row
from ._rows import (
    EFFECT_COLUMNS,
    EVENT_COLUMNS,
    event_from_row,
    event_params,
    record_from_row,
    record_params,
)
from ._store import ClaimResult, Expect

__all__ = ["AsyncPostgresStore", "PostgresStore", "open_postgres", "parse_url"]

T = TypeVar("T")

# --- SQL: one set of constants for both stores ------------------------------------

_COLS = ", ".join(EFFECT_COLUMNS)
_MARKS = ", ".join("%s" for _ in EFFECT_COLUMNS)
_SET = ", ".join(f"{c} = %s" for c in EFFECT_COLUMNS[1:])
_EV_COLS = ", ".join(EVENT_COLUMNS)
# Typed, because a CTE's SELECT list gives untyped parameters no column to infer from.
_EV_TYPED = (
    "%s::text, %s::text, %s::float8, %s::bigint, %s::text, %s::text, %s::text, %s::text, %s::text"
)
_EV_MARKS = ", ".join("%s" for _ in EVENT_COLUMNS)

SQL_GET = f"SELECT {_COLS} FROM effects WHERE key = %s"
SQL_CLAIM_INSERT = (
    f"WITH won AS (INSERT INTO effects ({_COLS}) VALUES ({_MARKS}) "
    "ON CONFLICT (key) DO NOTHING RETURNING key) "
    f"INSERT INTO events ({_EV_COLS}) SELECT {_EV_TYPED} FROM won"
)
SQL_CAS = (
    f"WITH won AS (UPDATE effects SET {_SET} WHERE key = %s AND status = %s AND fence = %s "
    "RETURNING key) "
    f"INSERT INTO events ({_EV_COLS}) SELECT {_EV_TYPED} FROM won"
)
SQL_EVENT = f"INSERT INTO events ({_EV_COLS}) VALUES ({_EV_MARKS})"
SQL_EVENTS = f"SELECT seq, {_EV_COLS} FROM events WHERE key = %s ORDER BY seq"
SQL_OPEN = (
    f"SELECT {_COLS} FROM effects WHERE status IN ('claimed', 'executing', 'unknown') "
    "ORDER BY lease_expires_at LIMIT %s"
)
SQL_COUNTS = "SELECT status, count(*) FROM effects GROUP BY status"
SQL_PREFIX = "SELECT key FROM effects WHERE key >= %s AND key < %s ORDER BY key LIMIT %s"
assert {s.value for s in OPEN_STATUSES} == {"claimed", "executing", "unknown"}

_L_COLS = ", ".join(LEASE_COLUMNS)
SQL_LEASE_GET = f"SELECT {_L_COLS} FROM leases WHERE name = %s"
SQL_LEASE_ACQUIRE = (
    f"INSERT INTO leases ({_L_COLS}) VALUES (%s, %s, 1, %s, %s, %s) "
    "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, token = leases.token + 1, "
    "acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, "
    "expires_at = excluded.expires_at "
    f"WHERE leases.owner = '' OR leases.expires_at <= %s RETURNING {_L_COLS}"
)
SQL_LEASE_RENEW = (
    "UPDATE leases SET heartbeat_at = %s, expires_at = %s "
    f"WHERE name = %s AND token = %s AND owner = %s RETURNING {_L_COLS}"
)
SQL_LEASE_RELEASE = (
    "UPDATE leases SET owner = '', expires_at = %s WHERE name = %s AND token = %s AND owner = %s"
)
_Q_COLS = ", ".join(QUEUE_COLUMNS)
SQL_QUEUE_PUT = (
    "INSERT INTO queue (kind, payload, status, created_at, updated_at) "
    "VALUES (%s, %s, 'queued', %s, %s) RETURNING id"
)
# The CTE is always materialised, so its rows are locked once; SKIP LOCKED
# lets concurrent takers pass each other's rows instead of queueing on them.
SQL_QUEUE_TAKE = (
    "WITH picked AS (SELECT id FROM queue WHERE status IN ('queued', 'taken') "
    "AND (status = 'queued' OR lease_expires_at <= %s) ORDER BY id LIMIT %s "
    "FOR UPDATE SKIP LOCKED) "
    "UPDATE queue SET status = 'taken', taken_by = %s, lease_expires_at = %s, "
    "attempts = queue.attempts + 1, updated_at = %s FROM picked WHERE queue.id = picked.id "
    f"RETURNING {', '.join('queue.' + c for c in QUEUE_COLUMNS)}"
)
SQL_QUEUE_EXTEND = (
    "UPDATE queue SET lease_expires_at = %s, updated_at = %s "
    "WHERE id = %s AND status = 'taken' AND attempts = %s AND taken_by = %s"
)
SQL_QUEUE_DONE = (
    "UPDATE queue SET status = 'done', updated_at = %s "
    "WHERE id = %s AND status = 'taken' AND attempts = %s AND taken_by = %s"
)
SQL_QUEUE_COUNTS = "SELECT status, count(*) FROM queue GROUP BY status"

SQL_META = "SELECT name, value FROM actonce_meta WHERE name IN ('schema_version', 'salt')"
SQL_SET_VERSION = (
    "INSERT INTO actonce_meta (name, value) VALUES ('schema_version', %s) "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)
# One lock for every opener of every schema: migrations are rare and short.
SQL_MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext('actonce.migrate'))"

_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
# SQLSTATE classes after which a write may have committed: connection
# exception, operator intervention (pg_terminate_backend), system error.
_MAYBE_COMMITTED = frozenset({"08", "57", "58", "XX"})


# --- primitives, written once -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stmt:
    """Run ``sql`` with ``params``; answer: ``(rowcount, rows)``."""

    sql: str
    params: tuple[Any, ...] = ()
    write: bool = False


Answer = tuple[int, list[tuple[Any, ...]]]
Work = Generator[_Stmt, Answer, T]


def _read_one(sql_text: str, params: tuple[Any, ...]) -> Work[tuple[Any, ...] | None]:
    _, rows = yield _Stmt(sql_text, params)
    return rows[0] if rows else None


def _get(key: str) -> Work[EffectRecord | None]:
    row = yield from _read_one(SQL_GET, (key,))
    return None if row is None else record_from_row(row)


def _match_prefix(prefix: str, limit: int) -> Work[list[str]]:
    _, rows = yield _Stmt(SQL_PREFIX, (prefix, prefix + "\U0010ffff", limit))
    return [str(r[0]) for r in rows]


def _cas_params(new: EffectRecord, expect: tuple[Status, int]) -> tuple[Any, ...]:
    return (*record_params(new)[1:], new.key, expect[0].value, expect[1])


def _claim(new: EffectRecord, expect: Expect, event: Event) -> Work[ClaimResult]:
    if expect is None:
        stmt = _Stmt(SQL_CLAIM_INSERT, (*record_params(new), *event_params(event)), True)
    else:
        stmt = _Stmt(SQL_CAS, (*_cas_params(new, expect), *event_params(event)), True)
    won, _ = yield stmt
    if won == 1:
        return ClaimResult(True, new)
    current = yield from _get(new.key)
    if current is None:  # pragma: no cover - rows are never deleted
        raise LedgerUnavailable(f"effect {new.key[:16]} vanished during a claim")
    return ClaimResult(False, current)


def _transition(
    expect: tuple[Status, int], new: EffectRecord, event: Event
) -> Work[EffectRecord | None]:
    won, _ = yield _Stmt(SQL_CAS, (*_cas_params(new, expect), *event_params(event)), True)
    return new if won == 1 else None


def _append_event(event: Event) -> Work[None]:
    yield _Stmt(SQL_EVENT, event_params(event), True)


def _events(key: str) -> Work[list[Event]]:
    _, rows = yield _Stmt(SQL_EVENTS, (key,))
    return [event_from_row(int(r[0]), r[1:]) for r in rows]


def _select(
    statuses: Iterable[Status] | None, limit: int, kind: str | None
) -> Work[list[EffectRecord]]:
    where: list[str] = []
    params: list[Any] = []
    if statuses is not None:
        where.append("status = ANY(%s)")
        params.append([s.value for s in statuses])
    if kind is not None:
        where.append("kind = %s")
        params.append(kind)
    text = f"SELECT {_COLS} FROM effects"
    if where:
        text += " WHERE " + " AND ".join(where)
    text += " ORDER BY updated_at, key LIMIT %s"
    _, rows = yield _Stmt(text, (*params, limit))
    return [record_from_row(r) for r in rows]


def _open_effects(limit: int) -> Work[list[EffectRecord]]:
    _, rows = yield _Stmt(SQL_OPEN, (limit,))
    return [record_from_row(r) for r in rows]


def _counts() -> Work[dict[Status, int]]:
    _, rows = yield _Stmt(SQL_COUNTS)
    return {Status(r[0]): int(r[1]) for r in rows}


def _lease_acquire(name: str, owner: str, now: float, expires_at: float) -> Work[LeaseResult]:
    _, rows = yield _Stmt(SQL_LEASE_ACQUIRE, (name, owner, now, now, expires_at, now), True)
    if rows:
        return LeaseResult(True, lease_from_row(rows[0]))
    held = yield from _read_one(SQL_LEASE_GET, (name,))
    if held is None:  # pragma: no cover - lease rows are never deleted
        raise LedgerUnavailable(f"lease {name!r} vanished during an acquisition")
    return LeaseResult(False, lease_from_row(held))


def _lease_renew(
    name: str, token: int, owner: str, now: float, expires_at: float
) -> Work[LeaseRecord | None]:
    _, rows = yield _Stmt(SQL_LEASE_RENEW, (now, expires_at, name, token, owner), True)
    return lease_from_row(rows[0]) if rows else None


def _lease_release(name: str, token: int, owner: str, now: float) -> Work[bool]:
    done, _ = yield _Stmt(SQL_LEASE_RELEASE, (now, name, token, owner), True)
    return done == 1


def _lease_get(name: str) -> Work[LeaseRecord | None]:
    row = yield from _read_one(SQL_LEASE_GET, (name,))
    return None if row is None else lease_from_row(row)


def _queue_put(kind: str, payload: str, now: float) -> Work[int]:
    _, rows = yield _Stmt(SQL_QUEUE_PUT, (kind, payload, now, now), True)
    return int(rows[0][0])


def _queue_take(
    worker: str, now: float, lease_expires_at: float, limit: int
) -> Work[list[QueueItem]]:
    params = (now, limit, worker, lease_expires_at, now)
    _, rows = yield _Stmt(SQL_QUEUE_TAKE, params, True)
    return sorted((item_from_row(r) for r in rows), key=lambda i: i.id)


def _queue_extend(
    item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
) -> Work[bool]:
    done, _ = yield _Stmt(SQL_QUEUE_EXTEND, (lease_expires_at, now, item_id, attempt, worker), True)
    return done == 1


def _queue_done(item_id: int, attempt: int, worker: str, now: float) -> Work[bool]:
    done, _ = yield _Stmt(SQL_QUEUE_DONE, (now, item_id, attempt, worker), True)
    return done == 1


def _queue_counts() -> Work[dict[str, int]]:
    _, rows = yield _Stmt(SQL_QUEUE_COUNTS)
    out = {s.value: 0 for s in ItemStatus}
    out.update({str(r[0]): int(r[1]) for r in rows})
    return out


# --- errors ----------------------------------------------------------------------------


def _translate(exc: psycopg.Error, stmt: _Stmt) -> Exception:
    state = exc.sqlstate
    if stmt.write and (state is None or state[:2] in _MAYBE_COMMITTED):
        return LedgerOutcomeUnknown(f"ledger write may or may not have committed: {exc}")
    what = "write" if stmt.write else "read"
    return LedgerUnavailable(f"ledger {what} failed: {exc}")


def _closed(stmt: _Stmt) -> LedgerUnavailable:
    # Nothing was sent on a connection known to be closed: surely not committed.
    return LedgerUnavailable(
        f"ledger connection closed before the {'write' if stmt.write else 'read'}"
    )


# --- URLs and migrations --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Target:
    conninfo: str
    schema: str | None
    min_size: int
    max_size: int


def parse_url(url: str, *, schema: str | None = None) -> tuple[str, str | None, dict[str, int]]:
    """Split a ledger URL into a libpq conninfo, a schema and pool sizes.

    actonce reads ``schema``, ``pool_min`` and ``pool_max`` from the query
    string and passes everything else to libpq. The schema becomes the
    connection's ``search_path``.

    Raises:
        BadLedgerURL: a malformed URL, schema name or pool size.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() == "postgres":
        parts = parts._replace(scheme="postgresql")
    kept, pool = [], {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == "schema":
            schema = schema or value
        elif name in ("pool_min", "pool_max"):
            if not value.isdigit() or int(value) < (0 if name == "pool_min" else 1):
                raise BadLedgerURL(f"{name} must be a whole number in {url!r}")
            pool[name] = int(value)
        else:
            kept.append((name, value))
    if schema is not None and not _SCHEMA.match(schema):
        raise BadLedgerURL(f"schema name {schema!r} must be a plain identifier")
    try:
        params = conninfo_to_dict(urlunsplit(parts._replace(query=urlencode(kept))))
    except psycopg.ProgrammingError as exc:
        raise BadLedgerURL(f"malformed PostgreSQL URL: {exc}") from exc
    if schema is not None:
        options = str(params.get("options") or "")
        params["options"] = f"{options} -c search_path={schema}".strip()
    return make_conninfo("", **params), schema, pool


def _meta(conn: psycopg.Connection[Any]) -> dict[str, str]:
    if conn.execute("SELECT to_regclass('actonce_meta')").fetchone() == (None,):
        return {}
    return {str(n): str(v) for n, v in conn.execute(SQL_META).fetchall()}


def _migrate(target: _Target, connect_timeout: float) -> bytes:
    """Bring the schema to head (under the advisory lock); return the salt."""
    try:
        with psycopg.connect(
            target.conninfo, autocommit=True, connect_timeout=max(1, int(connect_timeout))
        ) as conn:
            meta = _meta(conn)
            current = int(meta.get("schema_version", 0))
            _migrations.check_version("postgres", current)
            if current < _migrations.head("postgres"):
                with conn.transaction():
                    conn.execute(SQL_MIGRATION_LOCK)
                    if target.schema is not None:
                        conn.execute(
                            sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                                sql.Identifier(target.schema)
                            )
                        )
                    current = int(_meta(conn).get("schema_version", 0))  # another opener?
                    for m in _migrations.pending("postgres", current):
                        conn.execute(m.sql.encode())
                        conn.execute(SQL_SET_VERSION, (str(m.version),))
                meta = _meta(conn)
    except psycopg.Error as exc:
        raise LedgerUnavailable(f"cannot open PostgreSQL ledger: {exc}") from exc
    return bytes.fromhex(meta.get("salt", ""))


def _target(url: str, schema: str | None, min_size: int | None, max_size: int | None) -> _Target:
    conninfo, schema, pool = parse_url(url, schema=schema)
    high = max_size or pool.get("pool_max", 10)
    low = min(min_size if min_size is not None else pool.get("pool_min", 1), high)
    return _Target(conninfo, schema, low, high)


# --- the stores -------------------------------------------------------------------------------


class PostgresStore:
    """A ledger in PostgreSQL, synchronous (implements ``Store``).

    Args:
        url: ``postgresql://user@host:port/db`` (``?schema=``, ``pool_min=``,
            ``pool_max=`` are read by actonce; the rest goes to libpq).
        schema: keep the ledger in this schema (overrides the URL's).
        min_size: connections kept open (default 1).
        max_size: most connections at once (default 10); size it to the
            threads that share this store.
        timeout: seconds to wait for a connection before
            :class:`LedgerUnavailable`.
    """

    dialect = "postgres"

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int | None = None,
        max_size: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        self._target = _target(url, schema, min_size, max_size)
        self.schema = self._target.schema
        self._salt = _migrate(self._target, timeout)
        self._pool = ConnectionPool(
            self._target.conninfo,
            min_size=self._target.min_size,
            max_size=self._target.max_size,
            kwargs={"autocommit": True},
            timeout=timeout,
            name="actonce",
            open=True,
        )

    def _run(self, work: Work[T]) -> T:
        try:
            conn = self._pool.getconn()
        except (PoolTimeout, psycopg.Error) as exc:
            raise LedgerUnavailable(f"no PostgreSQL connection: {exc}") from exc
        try:
            answer: Any = None
            while True:
                try:
                    stmt = work.send(answer)
                except StopIteration as stop:
                    result: T = stop.value
                    return result
                if conn.closed:
                    raise _closed(stmt)
                try:
                    cur = conn.execute(stmt.sql, stmt.params)
                    answer = (cur.rowcount, cur.fetchall() if cur.description else [])
                except psycopg.Error as exc:
                    raise _translate(exc, stmt) from exc
        finally:
            self._pool.putconn(conn)

    def schema_version(self) -> int:
        """The schema version recorded in the database."""
        row = self._run(
            _read_one("SELECT value FROM actonce_meta WHERE name = 'schema_version'", ())
        )
        return 0 if row is None else int(row[0])

    def get(self, key: str) -> EffectRecord | None:
        return self._run(_get(key))

    def match_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        return self._run(_match_prefix(prefix, limit))

    def claim(self, new: EffectRecord, expect: Expect, event: Event) -> ClaimResult:
        return self._run(_claim(new, expect, event))

    def transition(
        self, expect: tuple[Status, int], new: EffectRecord, event: Event
    ) -> EffectRecord | None:
        return self._run(_transition(expect, new, event))

    def append_event(self, event: Event) -> None:
        self._run(_append_event(event))

    def events(self, key: str) -> list[Event]:
        return self._run(_events(key))

    def select(
        self, statuses: Iterable[Status] | None = None, limit: int = 100, kind: str | None = None
    ) -> list[EffectRecord]:
        return self._run(_select(statuses, limit, kind))

    def open_effects(self, limit: int = 1000) -> list[EffectRecord]:
        return self._run(_open_effects(limit))

    def counts(self) -> dict[Status, int]:
        return self._run(_counts())

    def salt(self) -> bytes:
        return self._salt

    def close(self) -> None:
        self._pool.close()

    def lease_acquire(self, name: str, owner: str, now: float, expires_at: float) -> LeaseResult:
        return self._run(_lease_acquire(name, owner, now, expires_at))

    def lease_renew(
        self, name: str, token: int, owner: str, now: float, expires_at: float
    ) -> LeaseRecord | None:
        return self._run(_lease_renew(name, token, owner, now, expires_at))

    def lease_release(self, name: str, token: int, owner: str, now: float) -> bool:
        return self._run(_lease_release(name, token, owner, now))

    def lease_get(self, name: str) -> LeaseRecord | None:
        return self._run(_lease_get(name))

    def queue_put(self, kind: str, payload: str, now: float) -> int:
        return self._run(_queue_put(kind, payload, now))

    def queue_take(
        self, worker: str, now: float, lease_expires_at: float, limit: int = 1
    ) -> list[QueueItem]:
        return self._run(_queue_take(worker, now, lease_expires_at, limit))

    def queue_extend(
        self, item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
    ) -> bool:
        return self._run(_queue_extend(item_id, attempt, worker, now, lease_expires_at))

    def queue_done(self, item_id: int, attempt: int, worker: str, now: float) -> bool:
        return self._run(_queue_done(item_id, attempt, worker, now))

    def queue_counts(self) -> dict[str, int]:
        return self._run(_queue_counts())


class AsyncPostgresStore:
    """A ledger in PostgreSQL, asynchronous (implements ``AsyncStore``).

    Same arguments as :class:`PostgresStore`. Migrations run when the
    object is made (a short blocking step); the async pool opens on first
    use, inside the running event loop.
    """

    dialect = "postgres"

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int | None = None,
        max_size: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        self._target = _target(url, schema, min_size, max_size)
        self.schema = self._target.schema
        self._timeout = timeout
        self._salt = _migrate(self._target, timeout)
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening = asyncio.Lock()

    async def _get_pool(self) -> AsyncConnectionPool[Any]:
        async with self._opening:
            if self._pool is None:
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self._target.conninfo,
                    min_size=self._target.min_size,
                    max_size=self._target.max_size,
                    kwargs={"autocommit": True},
                    timeout=self._timeout,
                    name="actonce-async",
                    open=False,
                )
                await pool.open()
                self._pool = pool
            return self._pool

    async def _run(self, work: Work[T]) -> T:
        pool = self._pool or await self._get_pool()
        try:
            conn = await pool.getconn()
        except (PoolTimeout, psycopg.Error) as exc:
            raise LedgerUnavailable(f"no PostgreSQL connection: {exc}") from exc
        try:
            answer: Any = None
            while True:
                try:
                    stmt = work.send(answer)
                except StopIteration as stop:
                    result: T = stop.value
                    return result
                if conn.closed:
                    raise _closed(stmt)
                try:
                    cur = await conn.execute(stmt.sql, stmt.params)
                    answer = (cur.rowcount, await cur.fetchall() if cur.description else [])
                except psycopg.Error as exc:
                    raise _translate(exc, stmt) from exc
        finally:
            await pool.putconn(conn)

    async def get(self, key: str) -> EffectRecord | None:
        return await self._run(_get(key))

    async def match_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        return await self._run(_match_prefix(prefix, limit))

    async def claim(self, new: EffectRecord, expect: Expect, event: Event) -> ClaimResult:
        return await self._run(_claim(new, expect, event))

    async def transition(
        self, expect: tuple[Status, int], new: EffectRecord, event: Event
    ) -> EffectRecord | None:
        return await self._run(_transition(expect, new, event))

    async def append_event(self, event: Event) -> None:
        await self._run(_append_event(event))

    async def events(self, key: str) -> list[Event]:
        return await self._run(_events(key))

    async def select(
        self, statuses: Iterable[Status] | None = None, limit: int = 100, kind: str | None = None
    ) -> list[EffectRecord]:
        return await self._run(_select(statuses, limit, kind))

    async def open_effects(self, limit: int = 1000) -> list[EffectRecord]:
        return await self._run(_open_effects(limit))

    async def counts(self) -> dict[Status, int]:
        return await self._run(_counts())

    async def salt(self) -> bytes:
        return self._salt

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.close()

    async def lease_acquire(
        self, name: str, owner: str, now: float, expires_at: float
    ) -> LeaseResult:
        return await self._run(_lease_acquire(name, owner, now, expires_at))

    async def lease_renew(
        self, name: str, token: int, owner: str, now: float, expires_at: float
    ) -> LeaseRecord | None:
        return await self._run(_lease_renew(name, token, owner, now, expires_at))

    async def lease_release(self, name: str, token: int, owner: str, now: float) -> bool:
        return await self._run(_lease_release(name, token, owner, now))

    async def lease_get(self, name: str) -> LeaseRecord | None:
        return await self._run(_lease_get(name))

    async def queue_put(self, kind: str, payload: str, now: float) -> int:
        return await self._run(_queue_put(kind, payload, now))

    async def queue_take(
        self, worker: str, now: float, lease_expires_at: float, limit: int = 1
    ) -> list[QueueItem]:
        return await self._run(_queue_take(worker, now, lease_expires_at, limit))

    async def queue_extend(
        self, item_id: int, attempt: int, worker: str, now: float, lease_expires_at: float
    ) -> bool:
        return await self._run(_queue_extend(item_id, attempt, worker, now, lease_expires_at))

    async def queue_done(self, item_id: int, attempt: int, worker: str, now: float) -> bool:
        return await self._run(_queue_done(item_id, attempt, worker, now))

    async def queue_counts(self) -> dict[str, int]:
        return await self._run(_queue_counts())


def open_postgres(url: str, *, prefer_async: bool = False) -> PostgresStore | AsyncPostgresStore:
    """Open the PostgreSQL ledger ``url`` names (async when ``prefer_async``)."""
    if prefer_async:
        return AsyncPostgresStore(url)
    return PostgresStore(url)
