"""The one rule for PostgreSQL in tests: which server, and what to do without one.

``ACTONCE_TEST_POSTGRES_DSN`` names the server. Unset: PostgreSQL tests skip
and say how to enable them. Set but unreachable: they skip on a laptop and
fail under CI (``CI`` set), never a silent skip there.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

ENABLE = (
    "PostgreSQL tests are off: set ACTONCE_TEST_POSTGRES_DSN="
    "postgresql://postgres@127.0.0.1:5432/test to run them"
)


def skip_or_fail(message: str, *, module_level: bool = False) -> NoReturn:
    """Skip with ``message`` on a laptop; fail with it under CI (``CI`` set)."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message, allow_module_level=module_level)


def postgres_dsn() -> str:
    """The test server's DSN, after checking it answers (skip or fail otherwise)."""
    dsn = os.environ.get("ACTONCE_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip(ENABLE)
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        skip_or_fail(f"PostgreSQL at {dsn} is unreachable: {exc}")
    return dsn


def drop_schema(dsn: str, schema: str) -> None:
    """Drop a test schema and everything in it."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
