"""Opening a ledger, on SQLite and PostgreSQL: what is refused, with which words,
what a store sets on its connection, and what read-only and a ledger moved
under a running store do.

``_store/sqlite.py`` and ``_store/postgres_schema.py``/``postgres.py`` at the
edges the other conformance tests (which open a fresh ledger each) never
reach: another application's database, an empty file, an old schema opened
read-only, a corrupt or newer version, a closed store, a refused value.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from actonce import (
    BadLedgerURL,
    LedgerNotFound,
    LedgerUnavailable,
    SchemaTooNew,
    SchemaTooOld,
    SQLiteStore,
    Status,
    UsageError,
)
from actonce._store.migrations import (
    check_version,
    head,
    migrations,
    parse_version,
    pending,
    split_sqlite,
)

from .test_gates import NOW, intent
from .test_store import T0, event, record

HEAD = head("sqlite")
NOT_FOUND = "create it with `actonce init --ledger {p}` or open_ledger(url, create=True)"


def _old_sqlite(path: Path, version: int = 1) -> None:
    """A ledger file at schema ``version``, as an old actonce left it."""
    with sqlite3.connect(path, isolation_level=None) as conn:
        for m in migrations("sqlite")[:version]:
            for statement in split_sqlite(m.sql):
                conn.execute(statement)
        conn.execute(
            "INSERT INTO actonce_meta (name, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (str(version),),
        )
    conn.close()


def _set_version(path: Path, value: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE actonce_meta SET value = ? WHERE name = 'schema_version'", (value,))
    conn.close()


# --- migrations: versions and statements ---------------------------------------------------


def test_versions_are_plain_ascii_numbers() -> None:
    assert parse_version(None, "x") == 0
    assert parse_version("0", "x") == 0
    assert parse_version("10", "x") == 10
    for bad in ("٣", "-1", "1.0", "", " 1", "v" * 60):
        with pytest.raises(LedgerUnavailable) as refused:
            parse_version(bad, "at.db")
        assert str(refused.value) == (
            f"the ledger at.db has a corrupt schema_version {bad[:40]!r}; refusing to use it"
        )


def test_a_version_past_the_newest_migration_is_refused() -> None:
    assert HEAD == head("postgres") == len(migrations("sqlite")) == 10
    check_version("sqlite", HEAD)
    with pytest.raises(SchemaTooNew) as refused:
        check_version("sqlite", HEAD + 1)
    assert str(refused.value) == (
        f"the ledger has schema version {HEAD + 1}, but this actonce understands up to "
        f"{HEAD}: upgrade actonce"
    )
    with pytest.raises(SchemaTooNew):
        pending("postgres", HEAD + 1)


def test_pending_migrations_are_the_ones_past_the_current_version() -> None:
    assert [m.version for m in pending("sqlite", 0)] == list(range(1, HEAD + 1))
    assert [m.version for m in pending("sqlite", 7)] == list(range(8, HEAD + 1))
    assert pending("sqlite", HEAD) == []
    first = migrations("postgres")[0]
    assert (first.version, first.name) == (1, "0001_initial.sql")
    assert [m.name[:5] for m in migrations("sqlite")] == [f"{v:04d}_" for v in range(1, 11)]


def test_a_sqlite_migration_splits_into_whole_statements() -> None:
    text = (
        "-- a comment before anything\n"
        "CREATE TABLE a (x INTEGER);\n"
        "  -- an indented comment\n"
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n"
        "  -- inside the trigger\n"
        "  UPDATE a SET x = 1;\n"
        "END;\n"
        "CREATE INDEX i ON a (x)"
    )
    assert split_sqlite(text) == [
        "CREATE TABLE a (x INTEGER);",
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n"
        "  -- inside the trigger\n"
        "  UPDATE a SET x = 1;\n"
        "END;",
        "CREATE INDEX i ON a (x)",
    ]
    assert split_sqlite("-- only\n\n") == []


# --- SQLite: what opening refuses ---------------------------------------------------------


def test_sqlite_refuses_a_path_with_nul_and_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(BadLedgerURL, match=r"^a ledger path cannot contain a NUL character$"):
        SQLiteStore(f"{tmp_path}/a\x00.db", create=True)
    missing = tmp_path / "nofolder" / "x.db"
    with pytest.raises(LedgerNotFound) as refused:
        SQLiteStore(str(missing), create=True)
    assert str(refused.value) == f"no ledger at {missing} (there is no folder {missing.parent})"


def test_sqlite_creates_a_ledger_only_when_asked(tmp_path: Path) -> None:
    path = str(tmp_path / "x.db")
    for kwargs in ({}, {"readonly": True}, {"readonly": True, "create": True}):
        with pytest.raises(LedgerNotFound) as refused:
            SQLiteStore(path, **kwargs)  # type: ignore[arg-type]
        assert str(refused.value) == f"no ledger at {path}: " + NOT_FOUND.format(p=path)
        assert not os.path.exists(path)
    store = SQLiteStore(path, create=True)
    assert store.schema_version() == HEAD and len(store.ledger_id) > 8
    again = SQLiteStore(path)
    assert again.ledger_id == store.ledger_id
    again.close()
    store.close()


def test_sqlite_refuses_another_applications_database(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    for name in ("zeta", "alpha", "mid", "beta", "gamma", "omega", "kappa"):
        conn.execute(f"CREATE TABLE {name} (a)")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerUnavailable) as refused:
        SQLiteStore(str(path), create=True)
    assert str(refused.value) == (
        f"{path} is not an actonce ledger (it holds the tables alpha, beta, gamma, kappa, mid); "
        "refusing to use it"
    )


def test_sqlite_opens_an_empty_file_only_to_create_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    for kwargs in ({}, {"readonly": True}):
        with pytest.raises(LedgerNotFound) as refused:
            SQLiteStore(str(path), **kwargs)  # type: ignore[arg-type]
        assert str(refused.value) == (
            f"no ledger in {path} (an empty database): " + NOT_FOUND.format(p=path)
        )
    store = SQLiteStore(str(path), create=True)
    assert store.schema_version() == HEAD
    store.close()


def test_sqlite_refuses_a_file_that_is_no_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"x" * 200)
    with pytest.raises(LedgerUnavailable) as refused:
        SQLiteStore(str(path), create=True)
    assert str(refused.value) == f"cannot open ledger {path}: file is not a database"


def test_sqlite_refuses_a_corrupt_or_newer_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "led.db"
    SQLiteStore(str(path), create=True).close()
    _set_version(path, "two")
    with pytest.raises(LedgerUnavailable) as corrupt:
        SQLiteStore(str(path))
    assert str(corrupt.value) == (
        f"the ledger {path} has a corrupt schema_version 'two'; refusing to use it"
    )
    _set_version(path, str(HEAD + 1))
    with pytest.raises(SchemaTooNew):
        SQLiteStore(str(path), readonly=True)


def test_an_old_sqlite_ledger_is_migrated_for_writing_never_read_only(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_sqlite(path, 3)
    with pytest.raises(SchemaTooOld) as refused:
        SQLiteStore(str(path), readonly=True)
    assert str(refused.value) == (
        f"the ledger {path} has schema version 3, this actonce needs {HEAD}: open it for "
        "writing once (e.g. `actonce migrate`) to upgrade it"
    )
    store = SQLiteStore(str(path))  # no create needed: it is a ledger
    assert store.schema_version() == HEAD
    # the upgrade's pages are copied back and the WAL emptied (the old salt's frames)
    assert os.path.getsize(f"{path}-wal") == 0
    new = record("k1", Status.CONFIRMED)
    assert store.claim(new, None, event(new, new.status)).acquired
    store.close()
    reader = SQLiteStore(str(path), readonly=True)
    assert reader.get("k1") == new
    reader.close()


# --- SQLite: the connection a store keeps -------------------------------------------------


def _pragma(store: SQLiteStore, name: str) -> Any:
    return store._conn.execute(f"PRAGMA {name}").fetchone()[0]


def test_sqlite_waits_busy_timeout_and_journals_in_wal(tmp_path: Path) -> None:
    path = str(tmp_path / "led.db")
    store = SQLiteStore(path, create=True)
    assert _pragma(store, "busy_timeout") == 30000
    assert _pragma(store, "journal_mode") == "wal"
    quick = SQLiteStore(path, busy_timeout=2.5)
    assert _pragma(quick, "busy_timeout") == 2500
    reader = SQLiteStore(path, readonly=True, busy_timeout=0.25)
    assert _pragma(reader, "busy_timeout") == 250
    for s in (store, quick, reader):
        s.close()


def test_sqlite_fsyncs_durable_writes_and_with_sync_all_every_write(tmp_path: Path) -> None:
    path = str(tmp_path / "led.db")
    store = SQLiteStore(path, create=True)
    assert _pragma(store, "synchronous") == 2  # FULL until the first write
    store.queue_put("mail", "{}", T0)
    assert _pragma(store, "synchronous") == 1  # NORMAL
    new = record("k1", Status.EXECUTING)
    store.claim(new, None, event(new, new.status), durable=True)
    assert _pragma(store, "synchronous") == 2
    store.queue_put("mail", "{}", T0)
    assert _pragma(store, "synchronous") == 1
    store.close()
    every = SQLiteStore(path, sync="all")
    assert every.sync_all is True
    every.queue_put("mail", "{}", T0)
    assert _pragma(every, "synchronous") == 2
    every.close()


def test_a_read_only_sqlite_store_refuses_every_write(tmp_path: Path) -> None:
    path = str(tmp_path / "led.db")
    SQLiteStore(path, create=True).close()
    reader = SQLiteStore(path, readonly=True)
    assert reader.readonly is True
    for write in (
        lambda: reader.queue_put("mail", "{}", T0),
        lambda: reader.lease_acquire("l", "me", T0, T0 + 5),
        lambda: reader.intent_create(intent(), NOW, "setup"),
    ):
        with pytest.raises(LedgerUnavailable) as refused:
            write()
        assert str(refused.value) == f"the ledger {path} is open read-only"
    assert reader.queue_counts() == {"queued": 0, "taken": 0, "done": 0}
    reader.close()


def test_a_value_sqlite_cannot_encode_is_the_callers(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "led.db"), create=True)
    why = "'utf-8' codec can't encode character '\\ud800' in position 0: surrogates not allowed"
    with pytest.raises(UsageError) as read:
        store.get("\ud800")
    assert str(read.value) == f"the ledger cannot look up that value: {why}"
    with pytest.raises(UsageError) as written:
        store.queue_put("\ud800", "{}", T0)
    assert str(written.value) == f"the ledger refused a value (nothing was written): {why}"
    assert store.queue_counts()["queued"] == 0
    store.queue_put("mail", "{}", T0)  # the refused write left no transaction open
    assert store.queue_counts()["queued"] == 1
    store.close()


def test_a_closed_sqlite_store_reads_and_writes_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "led.db"), create=True)
    store.close()
    with pytest.raises(LedgerUnavailable) as read:
        store.get("k")
    assert str(read.value) == "ledger read failed: Cannot operate on a closed database."
    with pytest.raises(LedgerUnavailable) as written:
        store.queue_put("mail", "{}", T0)
    assert str(written.value) == "ledger busy or unwritable: Cannot operate on a closed database."


def test_a_ledger_moved_under_a_running_store_stops_its_writes(tmp_path: Path) -> None:
    path = tmp_path / "led.db"
    store = SQLiteStore(str(path), create=True)
    store.queue_put("mail", "{}", T0)
    tail = (
        "after it was opened; nothing was written (restore it, or reconcile against the "
        "ledger that holds the marks)"
    )
    path.rename(tmp_path / "moved.db")
    with pytest.raises(LedgerUnavailable) as deleted:
        store.queue_put("mail", "{}", T0)
    assert str(deleted.value) == f"the ledger {path} was deleted {tail}"
    SQLiteStore(str(path), create=True).close()
    with pytest.raises(LedgerUnavailable) as replaced:
        store.queue_put("mail", "{}", T0)
    assert str(replaced.value) == f"the ledger {path} was replaced by another file {tail}"
    store.close()
    fresh = SQLiteStore(str(path))
    assert fresh.queue_counts()["queued"] == 0  # nothing went into the new file
    fresh.close()


def test_an_in_memory_sqlite_ledger_needs_no_create() -> None:
    store = SQLiteStore(":memory:")
    assert store.schema_version() == HEAD
    store.queue_put("mail", "{}", T0)  # no file to check the identity of
    assert store.queue_counts()["queued"] == 1
    store.close()


# --- PostgreSQL: what opening refuses -----------------------------------------------------


def _pg(dsn: str, schema: str, **kwargs: Any) -> Any:
    from actonce import PostgresStore

    return PostgresStore(dsn, schema=schema, **kwargs)


def test_postgres_creates_a_ledger_only_when_asked(pg_schema: tuple[str, str]) -> None:
    from actonce._rules.secrets import mask_url

    dsn, schema = pg_schema
    where = f"{mask_url(dsn)} (schema {schema})"
    for kwargs in ({}, {"readonly": True}):
        with pytest.raises(LedgerNotFound) as refused:
            _pg(dsn, schema, **kwargs)
        assert str(refused.value) == (
            f"{where} holds no ledger: create a ledger with `actonce init --ledger URL` "
            "or open_ledger(url, create=True)"
        )
    store = _pg(dsn, schema, create=True, max_size=2)
    assert store.schema_version() == HEAD and len(store.ledger_id) > 8
    again = _pg(dsn, schema, readonly=True, max_size=2)
    assert again.ledger_id == store.ledger_id
    again.close()
    store.close()


def test_postgres_refuses_another_applications_schema(pg_schema: tuple[str, str]) -> None:
    import psycopg

    from actonce._rules.secrets import mask_url

    dsn, schema = pg_schema
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.orders (id int)")
    with pytest.raises(LedgerNotFound) as refused:
        _pg(dsn, schema)
    assert str(refused.value) == (
        f"{mask_url(dsn)} (schema {schema}) holds another application's tables: create a "
        "ledger with `actonce init --ledger URL` or open_ledger(url, create=True)"
    )


def test_postgres_refuses_an_old_schema_read_only_and_a_corrupt_one(
    pg_schema: tuple[str, str],
) -> None:
    import psycopg

    from actonce._rules.secrets import mask_url

    dsn, schema = pg_schema
    where = f"{mask_url(dsn)} (schema {schema})"
    _pg(dsn, schema, create=True, max_size=1).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"UPDATE {schema}.actonce_meta SET value = '9' WHERE name = 'schema_version'")
    with pytest.raises(SchemaTooOld) as old:
        _pg(dsn, schema, readonly=True)
    assert str(old.value) == (
        f"the ledger at {where} has schema version 9, this actonce needs {HEAD}: open it for "
        "writing once (e.g. `actonce migrate`) to upgrade it"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"UPDATE {schema}.actonce_meta SET value = 'x9' WHERE name = 'schema_version'")
    with pytest.raises(LedgerUnavailable) as corrupt:
        _pg(dsn, schema, create=True)
    assert str(corrupt.value) == (
        f"the ledger {where} has a corrupt schema_version 'x9'; refusing to use it"
    )


def test_postgres_unreachable_is_unavailable_with_the_url_masked() -> None:
    from actonce import PostgresStore

    with pytest.raises(LedgerUnavailable) as refused:
        PostgresStore("postgresql://u:secret@127.0.0.1:1/db", create=True, timeout=1)
    text = str(refused.value)
    assert text.startswith("cannot open the PostgreSQL ledger postgresql://u:***@127.0.0.1:1/db: ")
    assert "secret" not in text


def test_postgres_pool_takes_the_sizes_and_timeout_given(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    store = _pg(dsn, schema, create=True, min_size=0, max_size=3, timeout=4.0)
    assert (store.schema, store.readonly) == (schema, False)
    pool = store._pool
    assert (pool.name, pool.min_size, pool.max_size, pool.timeout) == ("actonce", 0, 3, 4.0)
    store.close()
    default = _pg(dsn, schema)
    assert (default._pool.min_size, default._pool.max_size, default._pool.timeout) == (1, 10, 10.0)
    default.close()


def test_a_read_only_postgres_store_refuses_every_write(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    _pg(dsn, schema, create=True, max_size=1).close()
    reader = _pg(dsn, schema, readonly=True, max_size=2)
    assert reader.readonly is True
    for write in (
        lambda: reader.queue_put("mail", "{}", T0),  # one statement
        lambda: reader.intent_create(intent(), NOW, "setup"),  # a transaction
    ):
        with pytest.raises(LedgerUnavailable) as refused:
            write()
        assert str(refused.value) == "the ledger is open read-only"
    assert reader.queue_counts() == {"queued": 0, "taken": 0, "done": 0}
    reader.close()


def test_a_read_only_async_postgres_store_refuses_every_write(pg_schema: tuple[str, str]) -> None:
    from actonce._store.postgres import AsyncPostgresStore

    dsn, schema = pg_schema
    _pg(dsn, schema, create=True, max_size=1).close()

    async def main() -> None:
        reader = AsyncPostgresStore(dsn, schema=schema, readonly=True, max_size=2, timeout=3.0)
        assert (reader.schema, reader.readonly) == (schema, True)
        for write in (
            lambda: reader.queue_put("mail", "{}", T0),
            lambda: reader.intent_create(intent(), NOW, "setup"),
        ):
            with pytest.raises(LedgerUnavailable) as refused:
                await write()
            assert str(refused.value) == "the ledger is open read-only"
        assert await reader.queue_counts() == {"queued": 0, "taken": 0, "done": 0}
        pool = reader._pool
        assert pool is not None
        assert (pool.name, pool.min_size, pool.max_size, pool.timeout) == (
            "actonce-async", 1, 2, 3.0,
        )  # fmt: skip
        await reader.aclose()

    asyncio.run(main())
