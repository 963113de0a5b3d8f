"""The plumbing under every store: the scrubbing connection and cursors, the
thread adapter, the statement descriptors, and what opening an up-to-date
PostgreSQL ledger writes (nothing: a read-only role may open it).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import Any

import pytest

from actonce import MemoryStore, SQLiteStore, scrub_stored
from actonce._store.scrubbing import ScrubbingConnection
from actonce._store.threads import ThreadedStore, threaded

from .test_store import T0

SECRET = "Authorization: Bearer 0123456789abcdefghijklmnopqrstuv"


def test_the_sqlite_connection_scrubs_execute_and_executemany() -> None:
    assert scrub_stored(SECRET) != SECRET
    conn = sqlite3.connect(":memory:", factory=ScrubbingConnection)
    conn.execute("CREATE TABLE t (n INTEGER, v TEXT)")
    conn.execute("INSERT INTO t VALUES (?, ?)", (0, SECRET))
    cur = conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, SECRET), (2, "plain")])
    assert cur.rowcount == 2
    assert conn.execute("SELECT n, v FROM t ORDER BY n").fetchall() == [
        (0, scrub_stored(SECRET)),
        (1, scrub_stored(SECRET)),
        (2, "plain"),
    ]
    # a lookup is scrubbed by the same rules, so the stored value is found again
    assert conn.execute("SELECT n FROM t WHERE v = ? ORDER BY n", (SECRET,)).fetchall() == [
        (0,),
        (1,),
    ]
    conn.close()


def test_both_postgresql_cursors_pass_prepare_and_binary_on(pg_schema: tuple[str, str]) -> None:
    import psycopg

    from actonce._store.pg_scrubbing import AsyncScrubbingCursor, ScrubbingCursor

    dsn, _ = pg_schema
    with psycopg.connect(dsn, cursor_factory=ScrubbingCursor) as conn:
        cur = conn.cursor()
        assert cur.execute("SELECT %s::int4", (7,), binary=True) is cur
        assert cur.pgresult is not None and cur.pgresult.fformat(0) == 1
        assert cur.fetchone() == (7,)
        cur.execute("SELECT %s::int4", (7,), binary=False)
        assert cur.pgresult is not None and cur.pgresult.fformat(0) == 0
        cur.execute("SELECT %s::text", (SECRET,), prepare=True)
        assert cur.fetchone() == (scrub_stored(SECRET),)
        prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
        assert prepared is not None and prepared[0] == 1

    async def go() -> tuple[int, int, Any, int]:
        async with await psycopg.AsyncConnection.connect(
            dsn, cursor_factory=AsyncScrubbingCursor
        ) as conn:
            cur = conn.cursor()
            assert await cur.execute("SELECT %s::int4", (7,), binary=True) is cur
            assert cur.pgresult is not None
            binary = cur.pgresult.fformat(0)
            await cur.execute("SELECT %s::int4", (7,), binary=False)
            assert cur.pgresult is not None
            text = cur.pgresult.fformat(0)
            await cur.execute("SELECT %s::text", (SECRET,), prepare=True)
            row = await cur.fetchone()
            count = await (
                await conn.execute("SELECT count(*) FROM pg_prepared_statements")
            ).fetchone()
            assert count is not None
            return binary, text, row, count[0]

    assert asyncio.run(go()) == (1, 0, (scrub_stored(SECRET),), 1)


def test_opening_an_up_to_date_postgres_ledger_writes_nothing(pg_schema: tuple[str, str]) -> None:
    """A reader's role may be read-only: opening a ledger at the newest schema (for
    reading or writing) takes no lock, creates no schema, migrates nothing."""
    from actonce import PostgresStore

    dsn, schema = pg_schema
    PostgresStore(dsn, schema=schema, create=True, max_size=1).close()
    joiner = "&" if "?" in dsn else "?"
    read_only_session = f"{dsn}{joiner}options=-c%20default_transaction_read_only%3Don"
    for readonly in (True, False):
        store = PostgresStore(read_only_session, schema=schema, readonly=readonly, max_size=1)
        assert store.queue_counts() == {"queued": 0, "taken": 0, "done": 0}
        store.close()


def test_the_thread_adapter_runs_every_call_in_its_one_named_thread() -> None:
    class Recording(MemoryStore):
        """A memory store that notes which thread ran each call."""

        seen: list[str]

        def queue_put(self, kind: str, payload: str, now: float) -> int:
            self.seen.append(threading.current_thread().name)
            return super().queue_put(kind, payload, now)

    inner = Recording()
    inner.seen = []
    adapter = threaded(inner)
    assert isinstance(adapter, ThreadedStore) and adapter.inner is inner
    assert threaded(adapter) is adapter  # an adapter is not wrapped again

    async def go() -> tuple[int, int]:
        first = await adapter.queue_put("mail", "{}", T0)
        second = await adapter.queue_put("mail", "{}", T0)
        return first, second

    assert asyncio.run(go()) == (1, 2)
    assert len(set(inner.seen)) == 1 and inner.seen[0].startswith("actonce-store")
    assert adapter.queue_put.__name__ == "queue_put"
    assert adapter.dialect == "sqlite"  # an attribute is answered as it is
    asyncio.run(adapter.aclose())
    with pytest.raises(Exception, match="closed"):
        inner.queue_put("mail", "{}", T0)


def test_an_async_store_is_its_own_async_store() -> None:
    class Native:
        async def get(self, key: str) -> None:
            return None

    native = Native()
    assert threaded(native) is native
    sqlite_store = SQLiteStore(":memory:")
    wrapped = threaded(sqlite_store)
    assert isinstance(wrapped, ThreadedStore) and wrapped.inner is sqlite_store
    asyncio.run(wrapped.aclose())


def test_the_primitives_are_descriptors_on_the_class() -> None:
    from actonce._store.sqlite import _reads, _writes

    assert isinstance(SQLiteStore.__dict__["intent_get"], _reads)
    assert isinstance(SQLiteStore.intent_get, _reads)
    assert isinstance(SQLiteStore.intent_create, _writes)
    pytest.importorskip("psycopg")
    from actonce._store.postgres import (
        AsyncPostgresStore,
        PostgresStore,
        _async,
        _async_tx,
        _sync,
        _sync_tx,
    )

    assert type(PostgresStore.intent_get) is _sync
    assert type(PostgresStore.intent_create) is _sync_tx
    assert type(AsyncPostgresStore.intent_get) is _async
    assert type(AsyncPostgresStore.intent_create) is _async_tx
    assert PostgresStore.intent_get.__doc__ == PostgresStore.intent_get.work.__doc__


def test_a_memory_stores_failure_hook_fails_the_next_write_once() -> None:
    store = MemoryStore()
    assert store.fail_next_write is None
    boom = RuntimeError("disk on fire")
    store.fail_next_write = boom
    assert store.queue_counts()["queued"] == 0  # reads pass the hook by
    with pytest.raises(RuntimeError) as raised:
        store.queue_put("mail", "{}", T0)
    assert raised.value is boom and store.fail_next_write is None
    assert store.queue_counts()["queued"] == 0
    assert store.queue_put("mail", "{}", T0) == 1
    assert (store.path, store.readonly, store.sync_all) == (":memory:", False, False)
    store.close()
