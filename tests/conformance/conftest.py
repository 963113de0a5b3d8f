"""One ``store`` fixture over every backend: memory, SQLite, PostgreSQL.

PostgreSQL runs when ``ACTONCE_TEST_POSTGRES_DSN`` names a server; each test
gets a schema of its own, dropped afterwards. Unset: those cases skip and
say how to enable them. With ``CI`` set, an unreachable server fails them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actonce import MemoryStore, SQLiteStore
from pgtest import drop_schema, postgres_dsn


@pytest.fixture
def pg_schema() -> Iterator[tuple[str, str]]:
    """A fresh schema name on the test server, dropped afterwards: (dsn, schema)."""
    dsn = postgres_dsn()
    schema = f"actonce_test_{uuid.uuid4().hex[:10]}"
    try:
        yield dsn, schema
    finally:
        drop_schema(dsn, schema)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    if backend == "memory":
        yield MemoryStore()
        return
    if backend == "sqlite":
        s = SQLiteStore(str(tmp_path / "ledger.db"), create=True)
        yield s
        s.close()
        return
    from actonce import PostgresStore

    dsn, schema = request.getfixturevalue("pg_schema")
    s = PostgresStore(dsn, schema=schema, max_size=16, create=True)
    yield s
    s.close()
