"""Fixtures of the engine tests: a PostgreSQL ledger schema of their own.

The broker (Redis) and the order service are started by each test itself
(``services.py``) and stopped by PID. Without ``ACTONCE_TEST_POSTGRES_DSN``
the Celery tests skip with the hint; under CI a missing part fails.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from pgtest import drop_schema, postgres_dsn


@pytest.fixture
def pg_ledger() -> Iterator[str]:
    """A ledger URL on a fresh schema of the test server, dropped afterwards."""
    dsn = postgres_dsn()
    schema = f"actonce_engines_{uuid.uuid4().hex[:10]}"
    from actonce import PostgresStore

    PostgresStore(dsn, schema=schema, min_size=0, create=True).close()  # migrate once, up front
    sep = "&" if "?" in dsn else "?"
    try:
        yield f"{dsn}{sep}schema={schema}&pool_max=2"
    finally:
        drop_schema(dsn, schema)
