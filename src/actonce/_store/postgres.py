"""The shared ledger: PostgreSQL, for many workers on many machines.

Theory of operation. The primitives are written once, as generators of
statements (:mod:`actonce._store.postgres_ops`); :class:`PostgresStore` runs
them on a ``psycopg_pool`` connection, :class:`AsyncPostgresStore` awaits
them on an async pool. Each store exposes a primitive as one line,
``get = _sync(ops.get)``: a descriptor that runs the generator, so nothing
is forwarded by hand and the signatures stay typed.

Migrations (``_store/schema/postgres``) run when a store opens for writing
(:mod:`actonce._store.postgres_schema`, with the URL's parsing). A schema
without a ledger is refused unless ``create=True``; ``readonly=True`` never
creates or migrates. ``?schema=name`` in the URL keeps the ledger in its own
schema (created if needed, when creating) through the connection's
``search_path``.

:meth:`PostgresStore.server_time` is the database server's clock: ledgers on
PostgreSQL compare leases and settle windows on it, not on each worker's
own clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from .._rules.errors import LedgerOutcomeUnknown, LedgerUnavailable, UsageError
from .._rules.holds import Gate, Settle
from .._rules.model import EffectRecord, Event, Status
from . import (
    approval_ops,
    budget_ops,
    firewall_ops,
    gated_ops,
    intent_ops,
    listing,
    operation_ops,
    summary_ops,
)
from . import migrations as _migrations
from . import postgres_ops as ops
from .base import Expect
from .pg_scrubbing import AsyncScrubbingCursor, ScrubbingCursor
from .postgres_schema import open_schema, parse_url, target_of
from .records import ClaimResult

__all__ = ["AsyncPostgresStore", "PostgresStore", "open_postgres"]

P = ParamSpec("P")
T = TypeVar("T")


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


def _raise_if_callers(exc: Exception, stmt: ops.Stmt) -> None:
    """A value refused inside a transaction is the caller's, as outside one
    (:func:`~actonce._store.postgres_ops.translate`: ``UsageError``, nothing
    written); any other error is the transaction's to report."""
    error = ops.translate(exc, stmt)
    if isinstance(error, UsageError):
        raise error from exc


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
        except (psycopg.Error, UnicodeError, ValueError) as exc:
            _raise_if_callers(exc, stmt)
            raise
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
        except (psycopg.Error, UnicodeError, ValueError) as exc:
            _raise_if_callers(exc, stmt)
            raise
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
        self._target = target_of(url, schema, min_size, max_size)
        self.schema = self._target.schema
        self.readonly = readonly
        self.ledger_id = open_schema(self._target, timeout, create=create, readonly=readonly)
        self._pool = ConnectionPool(
            self._target.conninfo,
            min_size=self._target.min_size,
            max_size=self._target.max_size,
            # Every value bound into any table is scrubbed there (see pg_scrubbing).
            kwargs={"autocommit": True, "cursor_factory": ScrubbingCursor},
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
        """The schema version recorded in the database (0 if none; a corrupt one is refused)."""
        row = self._run(
            ops.read_one("SELECT value FROM actonce_meta WHERE name = 'schema_version'")
        )
        value = None if row is None else str(row[0])
        return _migrations.parse_version(value, self._target.where)

    get = _sync(ops.get)
    match_prefix = _sync(ops.match_prefix)
    extend = _sync(ops.extend)
    release = _sync(ops.release)
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
    intent_get = _sync(_q(intent_ops.intent_get))
    intent_chain = _sync(_q(intent_ops.intent_chain))
    intent_list = _sync(_q(intent_ops.intent_list))
    intent_create = _sync_tx(_q(intent_ops.intent_create))
    intent_revise = _sync_tx(_q(gated_ops.intent_revise))
    intent_touch = _sync_tx(_q(intent_ops.intent_touch))
    intent_withdraw = _sync_tx(_q(gated_ops.intent_withdraw))
    approval_get = _sync(_q(approval_ops.approval_get))
    approval_list = _sync(_q(approval_ops.approval_list))
    approval_put = _sync_tx(_q(approval_ops.approval_put))
    approval_update = _sync_tx(_q(approval_ops.approval_update))
    approval_replace = _sync_tx(_q(approval_ops.approval_replace))
    approval_answer = _sync_tx(_q(approval_ops.approval_answer))
    approval_set_code = _sync_tx(_q(approval_ops.approval_set_code))
    code_failures = _sync_tx(_q(approval_ops.code_failures))
    code_packets = _sync(_q(approval_ops.code_packets))
    holds_of = _sync(_q(gated_ops.holds_of))
    pool_define = _sync_tx(_q(budget_ops.pool_define))
    pool_get = _sync(_q(budget_ops.pool_get))
    budget_usage = _sync(_q(budget_ops.budget_usage))
    operation_put = _sync_tx(_q(operation_ops.operation_put))
    operation_get = _sync(_q(operation_ops.operation_get))
    receipt_put = _sync_tx(_q(operation_ops.receipt_put))
    receipt_get = _sync(_q(operation_ops.receipt_get))
    receipt_list = _sync(_q(operation_ops.receipt_list))
    operation_of = _sync(_q(operation_ops.operation_of))
    operations_in = _sync(_q(operation_ops.operations_in))
    operations_due = _sync(_q(operation_ops.operations_due))
    decisions_of = _sync(_q(operation_ops.decisions_of))
    decision_put = _sync_tx(_q(operation_ops.decision_put))
    summary_put = _sync_tx(_q(summary_ops.summary_put))
    summary_get = _sync(_q(summary_ops.summary_get))
    summary_list = _sync(_q(summary_ops.summary_list))
    refusal_put = _sync_tx(_q(firewall_ops.refusal_put))
    refusal_list = _sync(_q(firewall_ops.refusal_list))
    refusal_counts = _sync(_q(firewall_ops.refusal_counts))

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
        self._target = target_of(url, schema, min_size, max_size)
        self.schema = self._target.schema
        self.readonly = readonly
        self._timeout = timeout
        self.ledger_id = open_schema(self._target, timeout, create=create, readonly=readonly)
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening = asyncio.Lock()

    async def _get_pool(self) -> AsyncConnectionPool[Any]:
        async with self._opening:
            if self._pool is None:
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self._target.conninfo,
                    min_size=self._target.min_size,
                    max_size=self._target.max_size,
                    kwargs={"autocommit": True, "cursor_factory": AsyncScrubbingCursor},
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
    release = _async(ops.release)
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
    intent_get = _async(_q(intent_ops.intent_get))
    intent_chain = _async(_q(intent_ops.intent_chain))
    intent_list = _async(_q(intent_ops.intent_list))
    intent_create = _async_tx(_q(intent_ops.intent_create))
    intent_revise = _async_tx(_q(gated_ops.intent_revise))
    intent_touch = _async_tx(_q(intent_ops.intent_touch))
    intent_withdraw = _async_tx(_q(gated_ops.intent_withdraw))
    approval_get = _async(_q(approval_ops.approval_get))
    approval_list = _async(_q(approval_ops.approval_list))
    approval_put = _async_tx(_q(approval_ops.approval_put))
    approval_update = _async_tx(_q(approval_ops.approval_update))
    approval_replace = _async_tx(_q(approval_ops.approval_replace))
    approval_answer = _async_tx(_q(approval_ops.approval_answer))
    approval_set_code = _async_tx(_q(approval_ops.approval_set_code))
    code_failures = _async_tx(_q(approval_ops.code_failures))
    code_packets = _async(_q(approval_ops.code_packets))
    holds_of = _async(_q(gated_ops.holds_of))
    pool_define = _async_tx(_q(budget_ops.pool_define))
    pool_get = _async(_q(budget_ops.pool_get))
    budget_usage = _async(_q(budget_ops.budget_usage))
    operation_put = _async_tx(_q(operation_ops.operation_put))
    operation_get = _async(_q(operation_ops.operation_get))
    receipt_put = _async_tx(_q(operation_ops.receipt_put))
    receipt_get = _async(_q(operation_ops.receipt_get))
    receipt_list = _async(_q(operation_ops.receipt_list))
    operation_of = _async(_q(operation_ops.operation_of))
    operations_in = _async(_q(operation_ops.operations_in))
    operations_due = _async(_q(operation_ops.operations_due))
    decisions_of = _async(_q(operation_ops.decisions_of))
    decision_put = _async_tx(_q(operation_ops.decision_put))
    summary_put = _async_tx(_q(summary_ops.summary_put))
    summary_get = _async(_q(summary_ops.summary_get))
    summary_list = _async(_q(summary_ops.summary_list))
    refusal_put = _async_tx(_q(firewall_ops.refusal_put))
    refusal_list = _async(_q(firewall_ops.refusal_list))
    refusal_counts = _async(_q(firewall_ops.refusal_counts))

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
