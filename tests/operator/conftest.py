"""Fixtures of the operator tests: the world, a frozen clock, a ledger per backend.

This folder is not a package (no ``__init__.py``): a package named
``operator`` would shadow the standard library's. Its helpers live in
``opworld.py``, imported by that unique name.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opworld import DOUBT, POLICY, World

from actonce import Ledger, MemoryStore, Registry, SQLiteStore
from actonce.testing import FrozenClock
from pgtest import drop_schema, postgres_dsn


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(1_796_032_800.0)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    made: list[Any] = []
    schema = f"actonce_otest_{uuid.uuid4().hex[:10]}"
    dsn = postgres_dsn() if backend == "postgres" else ""
    memory = MemoryStore() if backend == "memory" else None

    def make() -> Any:
        if memory is not None:
            return memory
        if backend == "sqlite":
            store: Any = SQLiteStore(str(tmp_path / "ledger.db"), create=True)
        else:
            from actonce import PostgresStore

            store = PostgresStore(dsn, schema=schema, max_size=4, min_size=0, create=True)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
    if memory is not None:
        memory.close()
    if backend == "postgres":
        drop_schema(dsn, schema)


@pytest.fixture
def registry(world: World) -> Registry:
    reg = Registry()
    reg.register("post", world.verifier, policy=POLICY)
    reg.register("note", world.verifier, policy=DOUBT)
    return reg


@pytest.fixture
def ledger(make_store: Callable[[], Any], clock: FrozenClock,
           registry: Registry) -> Iterator[Ledger]:  # fmt: skip
    with Ledger(make_store(), clock=clock, registry=registry) as led:
        yield led
