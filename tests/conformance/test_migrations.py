"""Migrations: old -> head equals fresh, newer schemas are refused, openers may race."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from actonce import SchemaTooNew, SQLiteStore
from actonce._store.migrations import head, migrations
from actonce._store.migrations import split_sqlite as _split


def _sqlite_dump(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()


def test_sqlite_migrated_equals_fresh(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.db"
    SQLiteStore(str(fresh), create=True).close()
    old = tmp_path / "old.db"
    with sqlite3.connect(old, isolation_level=None) as conn:
        for statement in _split(migrations("sqlite")[0].sql):
            conn.execute(statement)
        conn.execute("INSERT INTO actonce_meta VALUES ('schema_version', '1')")
    store = SQLiteStore(str(old), create=True)
    assert store.schema_version() == head("sqlite") >= 2
    store.close()
    assert _sqlite_dump(old) == _sqlite_dump(fresh)


def test_sqlite_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SQLiteStore(str(path), create=True).close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE actonce_meta SET value = ? WHERE name = 'schema_version'",
            (str(head("sqlite") + 1),),
        )
    with pytest.raises(SchemaTooNew):
        SQLiteStore(str(path), create=True)


_PG_DUMP = [
    "SELECT table_name, column_name, ordinal_position, data_type, is_nullable, "
    "column_default, collation_name, is_identity FROM information_schema.columns "
    "WHERE table_schema = %(s)s ORDER BY table_name, ordinal_position",
    "SELECT indexname, replace(indexdef, %(s)s, 'S') FROM pg_indexes "
    "WHERE schemaname = %(s)s ORDER BY indexname",
    "SELECT c.relname, k.conname, pg_get_constraintdef(k.oid) FROM pg_constraint k "
    "JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = %(s)s ORDER BY c.relname, k.conname",
    "SELECT c.relname, t.tgname, t.tgtype FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(s)s AND NOT t.tgisinternal "
    "ORDER BY t.tgname",
    "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE n.nspname = %(s)s ORDER BY p.proname",
]


def _pg_dump(dsn: str, schema: str) -> list[list[tuple[Any, ...]]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return [conn.execute(q, {"s": schema}).fetchall() for q in _PG_DUMP]


def test_postgres_migrated_equals_fresh(pg_schema: tuple[str, str]) -> None:
    import psycopg
    from psycopg import sql

    from actonce import PostgresStore

    from .conftest import drop_schema

    dsn, schema = pg_schema
    fresh = schema + "_fresh"
    try:
        PostgresStore(dsn, schema=fresh, create=True).close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
            conn.execute(migrations("postgres")[0].sql.encode())
            conn.execute("INSERT INTO actonce_meta VALUES ('schema_version', '1')")
        store = PostgresStore(dsn, schema=schema, create=True)
        assert store.schema_version() == head("postgres") >= 2
        store.close()
        migrated, made = _pg_dump(dsn, schema), _pg_dump(dsn, fresh)
        assert migrated == made
        assert len(migrated[0]) > 20  # the dump saw the tables
    finally:
        drop_schema(dsn, fresh)


def test_postgres_newer_schema_is_refused(pg_schema: tuple[str, str]) -> None:
    import psycopg

    from actonce import PostgresStore

    dsn, schema = pg_schema
    PostgresStore(dsn, schema=schema, create=True).close()
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema}") as conn:
        conn.execute(
            "UPDATE actonce_meta SET value = %s WHERE name = 'schema_version'",
            (str(head("postgres") + 1),),
        )
    with pytest.raises(SchemaTooNew):
        PostgresStore(dsn, schema=schema, create=True)


def test_postgres_concurrent_openers_migrate_once(pg_schema: tuple[str, str]) -> None:
    from actonce import PostgresStore

    dsn, schema = pg_schema
    n = 8
    barrier = threading.Barrier(n)
    salts: list[str] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        barrier.wait()
        try:
            store = PostgresStore(dsn, schema=schema, min_size=0, create=True)
            salts.append(store.ledger_id)
            store.close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(salts) == n and len(set(salts)) == 1
