"""The shared ledger: PostgreSQL, for many workers on many machines.

Theory of operation. The primitives are written once, as generators of
statements (:mod:`actonce._store.postgres_ops`); :class:`PostgresStore` runs
them on a ``psycopg_pool`` connection, :class:`AsyncPostgresStore` awaits
them on an async pool. Each store exposes a primitive as one line,
``get = _sync(ops.get)``: a descriptor that runs the generator, so nothing
is forwarded by hand and the signatures stay typed.

Migrations (``_store/schema/postgres``) run when a store opens for writing,
inside one transaction that holds ``pg_advisory_xact_lock``: concurrent
openers wait for each other, and a schema newer than this code raises
:class:`~actonce.SchemaTooNew`. A schema without a ledger is refused unless
``create=True``; ``readonly=True`` never creates or migrates.
``?schema=name`` in the URL keeps the ledger in its own schema (created if
needed, when creating) through the connection's ``search_path``.

:meth:`PostgresStore.server_time` is the database server's clock: ledgers on
PostgreSQL compare leases and settle windows on it, not on each worker's
own clock.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, overload
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from .._rules.errors import (
    BadLedgerURL,
    LedgerNotFound,
    LedgerOutcomeUnknown,
    LedgerUnavailable,
    SchemaTooOld,
)
from .._rules.holds import Gate, Settle
from .._rules.model import EffectRecord, Event, Status
from .._rules.secrets import mask_url
from . import gated_ops, listing, receipt_ops, summary_ops
from . import migrations as _migrations
from . import postgres_ops as ops
from .base import Expect
from .records import ClaimResult

__all__ = ["AsyncPostgresStore", "PostgresStore", "open_postgres", "parse_url"]

P = ParamSpec("P")
T = TypeVar("T")

SQL_META = "SELECT name, value FROM actonce_meta WHERE name IN ('schema_version', 'ledger_id')"
SQL_SET_VERSION = (
    "INSERT INTO actonce_meta (name, value) VALUES ('schema_version', %s) "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)
# One lock for every opener of every schema: migrations are rare and short.
SQL_MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext('actonce.migrate'))"
_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


# --- URLs and migrations --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Target:
    conninfo: str
    schema: str | None
    min_size: int
    max_size: int
    display: str


def parse_url(
    url: str, *, schema: str | None = None, keep_schema: bool = True
) -> tuple[str, str | None, dict[str, int]]:
    """Split a ledger URL into a libpq conninfo, a schema and pool sizes.

    actonce reads ``schema``, ``pool_min`` and ``pool_max`` from the query
    string and passes everything else to libpq. The schema becomes the
    connection's ``search_path`` (unless ``keep_schema`` is False: then the
    conninfo is the server's alone). The client encoding is always UTF-8: a
    ledger holds text from anywhere, and another encoding would refuse some
    of it only once it is written (``PGCLIENTENCODING`` is overridden too).

    Raises:
        BadLedgerURL: a malformed URL, schema name, pool size or a client
            encoding other than UTF-8 (the message never shows the password).
    """
    shown = mask_url(url)
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError as exc:
        raise BadLedgerURL(f"malformed PostgreSQL URL {shown!r}: {exc}") from None
    if parts.scheme.lower() == "postgres":
        parts = parts._replace(scheme="postgresql")
    kept, pool = [], {}
    for name, value in query:
        if name == "schema":
            schema = schema or value
        elif name == "client_encoding":
            if value.replace("-", "").lower() not in ("utf8", "unicode"):
                raise BadLedgerURL(
                    f"client_encoding={value!r:.40}: a ledger talks UTF-8 to its server "
                    f"(drop the parameter from {shown!r})"
                )
        elif name in ("pool_min", "pool_max"):
            if not value.isdigit() or int(value) < (0 if name == "pool_min" else 1):
                raise BadLedgerURL(f"{name} must be a whole number in {shown!r}")
            pool[name] = int(value)
        else:
            kept.append((name, value))
    if schema is not None and not _SCHEMA.match(schema):
        raise BadLedgerURL(f"schema name {schema!r} must be a plain identifier")
    try:
        params = conninfo_to_dict(urlunsplit(parts._replace(query=urlencode(kept))))
    except (psycopg.Error, ValueError):
        raise BadLedgerURL(f"malformed PostgreSQL URL {shown!r}") from None
    if schema is not None and keep_schema:
        options = str(params.get("options") or "")
        params["options"] = f"{options} -c search_path={schema}".strip()
    params["client_encoding"] = "UTF8"
    return make_conninfo("", **params), schema, pool


def _target(url: str, schema: str | None, min_size: int | None, max_size: int | None) -> _Target:
    conninfo, schema, pool = parse_url(url, schema=schema)
    high = max_size or pool.get("pool_max", 10)
    low = min(min_size if min_size is not None else pool.get("pool_min", 1), high)
    return _Target(conninfo, schema, low, high, mask_url(url))


def _meta(conn: psycopg.Connection[Any]) -> dict[str, str]:
    if conn.execute("SELECT to_regclass('actonce_meta')").fetchone() == (None,):
        return {}
    return {str(n): str(v) for n, v in conn.execute(SQL_META).fetchall()}


def _has_tables(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
    ).fetchone()
    return bool(row and row[0])


def _open_schema(target: _Target, connect_timeout: float, *, create: bool, readonly: bool) -> str:
    """Check (and when asked, create or migrate) the ledger; return its id."""
    where = target.display + (f" (schema {target.schema})" if target.schema else "")
    try:
        with psycopg.connect(
            target.conninfo, autocommit=True, connect_timeout=max(1, int(connect_timeout))
        ) as conn:
            meta = _meta(conn)
            current = _migrations.parse_version(meta.get("schema_version"), where)
            head = _migrations.head("postgres")
            _migrations.check_version("postgres", current)
            if current == 0 and not create:
                why = "another application's tables" if _has_tables(conn) else "no ledger"
                raise LedgerNotFound(
                    f"{where} holds {why}: create a ledger with `actonce init --ledger URL` "
                    "or open_ledger(url, create=True)"
                )
            if current < head and readonly:
                raise SchemaTooOld(
                    f"the ledger at {where} has schema version {current}, this actonce needs "
                    f"{head}: open it for writing once (e.g. `actonce migrate`) to upgrade it"
                )
            if current < head:
                with conn.transaction():
                    conn.execute(SQL_MIGRATION_LOCK)
                    if target.schema is not None:
                        conn.execute(
                            sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                                sql.Identifier(target.schema)
                            )
                        )
                    current = _migrations.parse_version(
                        _meta(conn).get("schema_version"), where
                    )  # another opener may have migrated meanwhile
                    for m in _migrations.pending("postgres", current):
                        conn.execute(m.sql.encode())
                        conn.execute(SQL_SET_VERSION, (str(m.version),))
                meta = _meta(conn)
    except psycopg.Error as exc:
        raise LedgerUnavailable(f"cannot open the PostgreSQL ledger {where}: {exc}") from exc
    return meta.get("ledger_id", "")


# --- primitives as one-line descriptors ------------------------------------------------------


class _sync(Generic[P, T]):
    """A primitive of :class:`PostgresStore`: runs ``work`` on a pooled connection."""

    def __init__(self, work: Callable[P, ops.Work[T]]) -> None:
        self.work = work
        self.__doc__ = work.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _sync[P, T]: ...

    @overload
    def __get__(self, obj: PostgresStore, owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, obj: PostgresStore | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        work, run = self.work, obj._run

        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return run(work(*args, **kwargs))

        return call


class _async(Generic[P, T]):
    """A primitive of :class:`AsyncPostgresStore`: awaits ``work`` on a pooled connection."""

    def __init__(self, work: Callable[P, ops.Work[T]]) -> None:
        self.work = work

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _async[P, T]: ...

    @overload
    def __get__(self, obj: AsyncPostgresStore, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: AsyncPostgresStore | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        work, run = self.work, obj._run

        async def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return await run(work(*args, **kwargs))

        return call


class _sync_tx(_sync[P, T]):
    """A primitive of :class:`PostgresStore` that needs one transaction."""

    def __get__(self, obj: PostgresStore | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        work, run = self.work, obj._run_tx

        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return run(work(*args, **kwargs))

        return call


class _async_tx(_async[P, T]):
    """A primitive of :class:`AsyncPostgresStore` that needs one transaction."""

    def __get__(self, obj: AsyncPostgresStore | None, owner: type[Any]) -> Any:
        if obj is None:
            return self
        work, run = self.work, obj._run_tx

        async def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return await run(work(*args, **kwargs))

        return call


def _q(fn: Callable[P, ops.Work[T]]) -> Callable[P, ops.Work[T]]:
    """Statement work written with ``?`` placeholders, as PostgreSQL work."""

    def work(*args: P.args, **kwargs: P.kwargs) -> ops.Work[T]:
        return (yield from ops.pg(fn(*args, **kwargs)))

    work.__doc__ = fn.__doc__
    return work


def _run_body(conn: psycopg.Connection[Any], work: ops.Work[T]) -> T:
    answer: Any = None
    while True:
        try:
            stmt = work.send(answer)
        except StopIteration as stop:
            result: T = stop.value
            return result
        try:
            cur = conn.execute(stmt.sql, stmt.params)
        except (UnicodeError, ValueError) as exc:
            raise LedgerUnavailable(f"ledger write refused a value: {exc}") from exc
        answer = (cur.rowcount, cur.fetchall() if cur.description else [])


async def _arun_body(conn: psycopg.AsyncConnection[Any], work: ops.Work[T]) -> T:
    answer: Any = None
    while True:
        try:
            stmt = work.send(answer)
        except StopIteration as stop:
            result: T = stop.value
            return result
        try:
            cur = await conn.execute(stmt.sql, stmt.params)
        except (UnicodeError, ValueError) as exc:
            raise LedgerUnavailable(f"ledger write refused a value: {exc}") from exc
        answer = (cur.rowcount, await cur.fetchall() if cur.description else [])


# --- the stores -------------------------------------------------------------------------------


class PostgresStore:
    """A ledger in PostgreSQL, synchronous (implements ``Store``).

    Args:
        url: ``postgresql://user@host:port/db`` (``?schema=``, ``pool_min=``,
            ``pool_max=`` are read by actonce; the rest goes to libpq).
        schema: keep the ledger in this schema (overrides the URL's).
        create: make a ledger there when none exists.
        readonly: never create or migrate.
        min_size: connections kept open (default 1).
        max_size: most connections at once (default 10); size it to the
            threads that share this store.
        timeout: seconds to wait for a connection before
            :class:`~actonce.LedgerUnavailable`.
    """

    dialect = "postgres"

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        create: bool = False,
        readonly: bool = False,
        min_size: int | None = None,
        max_size: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        self._target = _target(url, schema, min_size, max_size)
        self.schema = self._target.schema
        self.readonly = readonly
        self.ledger_id = _open_schema(self._target, timeout, create=create, readonly=readonly)
        self._pool = ConnectionPool(
            self._target.conninfo,
            min_size=self._target.min_size,
            max_size=self._target.max_size,
            kwargs={"autocommit": True},
            timeout=timeout,
            name="actonce",
            open=True,
        )

    def _run(self, work: ops.Work[T]) -> T:
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
                    raise ops.closed(stmt)
                if stmt.write and self.readonly:
                    raise LedgerUnavailable("the ledger is open read-only")
                try:
                    cur = conn.execute(stmt.sql, stmt.params)
                    answer = (cur.rowcount, cur.fetchall() if cur.description else [])
                except (psycopg.Error, UnicodeError, ValueError) as exc:
                    raise ops.translate(exc, stmt) from exc
        finally:
            self._pool.putconn(conn)

    def _run_tx(self, work: ops.Work[T]) -> T:
        """Run ``work`` in one transaction; a failed COMMIT may have committed."""
        try:
            conn = self._pool.getconn()
        except (PoolTimeout, psycopg.Error) as exc:
            raise LedgerUnavailable(f"no PostgreSQL connection: {exc}") from exc
        if self.readonly:
            self._pool.putconn(conn)
            raise LedgerUnavailable("the ledger is open read-only")
        body_done = False
        try:
            with conn.transaction():
                result = _run_body(conn, work)
                body_done = True
            return result
        except psycopg.Error as exc:
            if body_done:
                raise LedgerOutcomeUnknown(
                    f"ledger commit may or may not have happened: {exc}"
                ) from exc
            # Inside an open transaction nothing is committed until COMMIT.
            raise LedgerUnavailable(f"ledger transaction failed: {exc}") from exc
        finally:
            self._pool.putconn(conn)

    def claim(
        self,
        new: EffectRecord,
        expect: Expect,
        event: Event,
        *,
        durable: bool = False,
        gate: Gate | None = None,
    ) -> ClaimResult:
        if gate is None or gate.empty:
            return self._run(ops.claim(new, expect, event))
        return self._run_tx(ops.claim_gated(new, expect, event, gate))

    def transition(
        self,
        expect: tuple[Status, int],
        new: EffectRecord,
        event: Event,
        *,
        durable: bool = False,
        settle: Settle | None = None,
        fields: tuple[str, ...] | None = None,
    ) -> EffectRecord | None:
        if settle is None:
            return self._run(ops.transition(expect, new, event, fields=fields))
        return self._run_tx(ops.transition_settled(expect, new, event, settle, fields))

    @staticmethod
    def conninfo(url: str) -> str:
        """The libpq conninfo of a ledger URL, without actonce's own parameters.

        Raises:
            BadLedgerURL: a malformed URL.
        """
        return parse_url(url, keep_schema=False)[0]

    def schema_version(self) -> int:
        """The schema version recorded in the database."""
        row = self._run(
            ops.read_one("SELECT value FROM actonce_meta WHERE name = 'schema_version'")
        )
        return 0 if row is None else int(row[0])

    get = _sync(ops.get)
    match_prefix = _sync(ops.match_prefix)
    extend = _sync(ops.extend)
    append_event = _sync(ops.append_event)
    events = _sync(ops.events)
    select = _sync(_q(listing.select))
    open_effects = _sync(ops.open_effects)
    counts = _sync(_q(listing.counts))
    duplicates = _sync(ops.duplicates)
    server_time = _sync(ops.server_time)
    lease_acquire = _sync(ops.lease_acquire)
    lease_renew = _sync(ops.lease_renew)
    lease_release = _sync(ops.lease_release)
    lease_get = _sync(ops.lease_get)
    queue_put = _sync(ops.queue_put)
    queue_take = _sync(ops.queue_take)
    queue_extend = _sync(ops.queue_extend)
    queue_done = _sync(ops.queue_done)
    queue_counts = _sync(ops.queue_counts)
    intent_get = _sync(_q(gated_ops.intent_get))
    intent_chain = _sync(_q(gated_ops.intent_chain))
    intent_list = _sync(_q(gated_ops.intent_list))
    intent_create = _sync_tx(_q(gated_ops.intent_create))
    intent_revise = _sync_tx(_q(gated_ops.intent_revise))
    intent_touch = _sync_tx(_q(gated_ops.intent_touch))
    approval_get = _sync(_q(gated_ops.approval_get))
    approval_list = _sync(_q(gated_ops.approval_list))
    approval_put = _sync_tx(_q(gated_ops.approval_put))
    approval_update = _sync_tx(_q(gated_ops.approval_update))
    approval_replace = _sync_tx(_q(gated_ops.approval_replace))
    approval_answer = _sync_tx(_q(gated_ops.approval_answer))
    approval_set_code = _sync_tx(_q(gated_ops.approval_set_code))
    code_failures = _sync_tx(_q(gated_ops.code_failures))
    code_packets = _sync(_q(gated_ops.code_packets))
    holds_of = _sync(_q(gated_ops.holds_of))
    pool_define = _sync_tx(_q(gated_ops.pool_define))
    pool_get = _sync(_q(gated_ops.pool_get))
    budget_usage = _sync(_q(gated_ops.budget_usage))
    operation_put = _sync_tx(_q(gated_ops.operation_put))
    operation_get = _sync(_q(gated_ops.operation_get))
    receipt_put = _sync_tx(_q(gated_ops.receipt_put))
    receipt_get = _sync(_q(gated_ops.receipt_get))
    receipt_list = _sync(_q(receipt_ops.receipt_list))
    operation_of = _sync(_q(receipt_ops.operation_of))
    summary_put = _sync_tx(_q(summary_ops.summary_put))
    summary_get = _sync(_q(summary_ops.summary_get))
    summary_list = _sync(_q(summary_ops.summary_list))

    def close(self) -> None:
        self._pool.close()


class AsyncPostgresStore:
    """A ledger in PostgreSQL, asynchronous (implements ``AsyncStore``).

    Same arguments as :class:`PostgresStore`. The schema is checked when the
    object is made (a short blocking step); the async pool opens on first
    use, inside the running event loop.
    """

    dialect = "postgres"

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        create: bool = False,
        readonly: bool = False,
        min_size: int | None = None,
        max_size: int | None = None,
        timeout: float = 10.0,
    ) -> None:
        self._target = _target(url, schema, min_size, max_size)
        self.schema = self._target.schema
        self.readonly = readonly
        self._timeout = timeout
        self.ledger_id = _open_schema(self._target, timeout, create=create, readonly=readonly)
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

    async def _run(self, work: ops.Work[T]) -> T:
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
                    raise ops.closed(stmt)
                if stmt.write and self.readonly:
                    raise LedgerUnavailable("the ledger is open read-only")
                try:
                    cur = await conn.execute(stmt.sql, stmt.params)
                    answer = (cur.rowcount, await cur.fetchall() if cur.description else [])
                except (psycopg.Error, UnicodeError, ValueError) as exc:
                    raise ops.translate(exc, stmt) from exc
        finally:
            await pool.putconn(conn)

    async def _run_tx(self, work: ops.Work[T]) -> T:
        """Run ``work`` in one transaction; a failed COMMIT may have committed."""
        pool = self._pool or await self._get_pool()
        try:
            conn = await pool.getconn()
        except (PoolTimeout, psycopg.Error) as exc:
            raise LedgerUnavailable(f"no PostgreSQL connection: {exc}") from exc
        if self.readonly:
            await pool.putconn(conn)
            raise LedgerUnavailable("the ledger is open read-only")
        body_done = False
        try:
            async with conn.transaction():
                result = await _arun_body(conn, work)
                body_done = True
            return result
        except psycopg.Error as exc:
            if body_done:
                raise LedgerOutcomeUnknown(
                    f"ledger commit may or may not have happened: {exc}"
                ) from exc
            raise LedgerUnavailable(f"ledger transaction failed: {exc}") from exc
        finally:
            await pool.putconn(conn)

    async def claim(
        self,
        new: EffectRecord,
        expect: Expect,
        event: Event,
        *,
        durable: bool = False,
        gate: Gate | None = None,
    ) -> ClaimResult:
        if gate is None or gate.empty:
            return await self._run(ops.claim(new, expect, event))
        return await self._run_tx(ops.claim_gated(new, expect, event, gate))

    async def transition(
        self,
        expect: tuple[Status, int],
        new: EffectRecord,
        event: Event,
        *,
        durable: bool = False,
        settle: Settle | None = None,
        fields: tuple[str, ...] | None = None,
    ) -> EffectRecord | None:
        if settle is None:
            return await self._run(ops.transition(expect, new, event, fields=fields))
        return await self._run_tx(ops.transition_settled(expect, new, event, settle, fields))

    get = _async(ops.get)
    match_prefix = _async(ops.match_prefix)
    extend = _async(ops.extend)
    append_event = _async(ops.append_event)
    events = _async(ops.events)
    select = _async(_q(listing.select))
    open_effects = _async(ops.open_effects)
    counts = _async(_q(listing.counts))
    duplicates = _async(ops.duplicates)
    server_time = _async(ops.server_time)
    lease_acquire = _async(ops.lease_acquire)
    lease_renew = _async(ops.lease_renew)
    lease_release = _async(ops.lease_release)
    lease_get = _async(ops.lease_get)
    queue_put = _async(ops.queue_put)
    queue_take = _async(ops.queue_take)
    queue_extend = _async(ops.queue_extend)
    queue_done = _async(ops.queue_done)
    queue_counts = _async(ops.queue_counts)
    intent_get = _async(_q(gated_ops.intent_get))
    intent_chain = _async(_q(gated_ops.intent_chain))
    intent_list = _async(_q(gated_ops.intent_list))
    intent_create = _async_tx(_q(gated_ops.intent_create))
    intent_revise = _async_tx(_q(gated_ops.intent_revise))
    intent_touch = _async_tx(_q(gated_ops.intent_touch))
    approval_get = _async(_q(gated_ops.approval_get))
    approval_list = _async(_q(gated_ops.approval_list))
    approval_put = _async_tx(_q(gated_ops.approval_put))
    approval_update = _async_tx(_q(gated_ops.approval_update))
    approval_replace = _async_tx(_q(gated_ops.approval_replace))
    approval_answer = _async_tx(_q(gated_ops.approval_answer))
    approval_set_code = _async_tx(_q(gated_ops.approval_set_code))
    code_failures = _async_tx(_q(gated_ops.code_failures))
    code_packets = _async(_q(gated_ops.code_packets))
    holds_of = _async(_q(gated_ops.holds_of))
    pool_define = _async_tx(_q(gated_ops.pool_define))
    pool_get = _async(_q(gated_ops.pool_get))
    budget_usage = _async(_q(gated_ops.budget_usage))
    operation_put = _async_tx(_q(gated_ops.operation_put))
    operation_get = _async(_q(gated_ops.operation_get))
    receipt_put = _async_tx(_q(gated_ops.receipt_put))
    receipt_get = _async(_q(gated_ops.receipt_get))
    receipt_list = _async(_q(receipt_ops.receipt_list))
    operation_of = _async(_q(receipt_ops.operation_of))
    summary_put = _async_tx(_q(summary_ops.summary_put))
    summary_get = _async(_q(summary_ops.summary_get))
    summary_list = _async(_q(summary_ops.summary_list))

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.close()


def open_postgres(
    url: str, *, create: bool = False, readonly: bool = False, prefer_async: bool = False
) -> PostgresStore | AsyncPostgresStore:
    """Open the PostgreSQL ledger ``url`` names (async when ``prefer_async``)."""
    if prefer_async:
        return AsyncPostgresStore(url, create=create, readonly=readonly)
    return PostgresStore(url, create=create, readonly=readonly)
