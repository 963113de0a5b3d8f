"""A store opened read-only refuses every write primitive, each one, and changes
nothing (SQLite and PostgreSQL, sync and async): on PostgreSQL each statement's
``write`` flag is what refuses it, so every flag is stated here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from actonce import LedgerUnavailable, SQLiteStore, Status

from .test_store import T0, event, record


def _writer(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> tuple[Any, Callable[[], Any]]:
    """A ledger with a lease, a taken queue item and an effect; and how to open it read-only."""
    if backend == "sqlite":
        path = str(tmp_path / "led.db")
        writer: Any = SQLiteStore(path, create=True)
        reader: Callable[[], Any] = lambda: SQLiteStore(path, readonly=True)  # noqa: E731
    else:
        from actonce import PostgresStore

        dsn, schema = request.getfixturevalue("pg_schema")
        writer = PostgresStore(dsn, schema=schema, create=True, max_size=2)
        reader = lambda: PostgresStore(dsn, schema=schema, readonly=True, max_size=2)  # noqa: E731
    writer.lease_acquire("op", "a", T0, T0 + 10)
    writer.queue_put("mail", "{}", T0)
    writer.queue_take("w", T0, T0 + 30)
    new = record("k1")
    writer.claim(new, None, event(new))
    return writer, reader


def _writes(store: Any) -> dict[str, Callable[[], Any]]:
    new = record("k1")
    moved = replace(new, status=Status.EXECUTING)
    other = record("k2")
    return {
        "claim": lambda: store.claim(other, None, event(other)),
        "claim cas": lambda: store.claim(moved, (Status.CLAIMED, 1), event(moved)),
        "transition": lambda: store.transition((Status.CLAIMED, 1), moved, event(moved)),
        "release": lambda: store.release("k1", (Status.CLAIMED, 1), None, event(new)),
        "extend": lambda: store.extend("k1", (Status.CLAIMED, 1), T0 + 999),
        "append_event": lambda: store.append_event(event(new)),
        "lease_acquire": lambda: store.lease_acquire("op2", "b", T0, T0 + 10),
        "lease_renew": lambda: store.lease_renew("op", 1, "a", T0 + 1, T0 + 20),
        "lease_release": lambda: store.lease_release("op", 1, "a", T0 + 1),
        "queue_put": lambda: store.queue_put("mail", "{}", T0),
        "queue_take": lambda: store.queue_take("w2", T0 + 100, T0 + 130),
        "queue_extend": lambda: store.queue_extend(1, 1, "w", T0 + 1, T0 + 60),
        "queue_done": lambda: store.queue_done(1, 1, "w", T0 + 1),
    }


def _state(store: Any) -> tuple[Any, ...]:
    return (
        store.get("k1"), store.get("k2"), len(store.events("k1")), store.lease_get("op"),
        store.lease_get("op2"), store.queue_counts(),
    )  # fmt: skip


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_read_only_store_refuses_every_write_primitive(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    writer, open_reader = _writer(backend, tmp_path, request)
    before = _state(writer)
    reader = open_reader()
    refused = []
    for name, write in _writes(reader).items():
        with pytest.raises(LedgerUnavailable) as exc:
            write()
        refused.append((name, str(exc.value).replace(f" {getattr(reader, 'path', '')} ", " ")))
    assert refused == [(name, "the ledger is open read-only") for name in _writes(reader)]
    assert _state(reader) == before == _state(writer)
    reader.close()
    writer.close()


def test_a_read_only_async_postgres_store_refuses_every_write_primitive(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from actonce._store.postgres import AsyncPostgresStore

    writer, _ = _writer("postgres", tmp_path, request)
    before = _state(writer)
    dsn, schema = request.getfixturevalue("pg_schema")

    async def go() -> list[str]:
        reader = AsyncPostgresStore(dsn, schema=schema, readonly=True, max_size=2)
        words = []
        for write in _writes(reader).values():
            try:
                await write()
            except LedgerUnavailable as exc:
                words.append(str(exc))
        await reader.aclose()
        return words

    assert asyncio.run(go()) == ["the ledger is open read-only"] * len(_writes(writer))
    assert _state(writer) == before
    writer.close()


def test_an_async_store_closes_its_pool_once_opened_and_nothing_before(
    pg_schema: tuple[str, str],
) -> None:
    from actonce import PostgresStore
    from actonce._store.postgres import AsyncPostgresStore

    dsn, schema = pg_schema
    PostgresStore(dsn, schema=schema, create=True, max_size=1).close()

    async def go() -> tuple[bool, bool]:
        unused = AsyncPostgresStore(dsn, schema=schema, max_size=1)
        await unused.aclose()  # no pool yet: nothing to close, no error
        used = AsyncPostgresStore(dsn, schema=schema, max_size=1)
        await used.queue_counts()
        assert used._pool is not None and not used._pool.closed
        await used.aclose()
        return unused._pool is None, used._pool.closed

    assert asyncio.run(go()) == (True, True)


def test_a_transition_naming_its_fields_writes_only_those(store: Any) -> None:
    new = record("k1", reason="kept", result_ref="ref-1")
    store.claim(new, None, event(new))
    moved = replace(new, status=Status.EXECUTING, reason="dropped", result_ref=None,
                    updated_at=T0 + 5, executing_at=T0 + 5)  # fmt: skip
    got = store.transition((Status.CLAIMED, 1), moved, event(moved),
                           fields=("status", "updated_at", "executing_at"))  # fmt: skip
    assert got == moved  # the caller's record, as given
    assert store.get("k1") == replace(new, status=Status.EXECUTING, updated_at=T0 + 5,
                                      executing_at=T0 + 5)  # fmt: skip
