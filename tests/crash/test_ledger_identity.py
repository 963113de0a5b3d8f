"""Issue 7, item 4: a ledger has an identity; a deleted or replaced file is noticed.

Real worker processes hold the ledger open while the test deletes or
replaces the file under them; a new process starts where the ledger was.
Before, running workers kept committing into the unlinked file and a new
process silently made an empty ledger at the same path and re-performed the
effects that were in flight. Now: every write checks the file is still the
one that was opened (``LedgerUnavailable``, nothing performed), and no
ledger is created where none exists unless asked (``LedgerNotFound``).
The read-only commands (``status``, ``list``, ``show``) never create or
migrate anything: not in a missing path, an empty file, another
application's SQLite database, or a PostgreSQL schema without a ledger.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from actonce import LedgerNotFound, LedgerUnavailable, Policy, SQLiteStore, Status

from .conftest import World, finish, read_json

POLICY = {"settle_seconds": 0.0, "verify_attempts": 1}


def _remove_ledger(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)


def _gated_worker(world: World, refs: list[str]) -> subprocess.Popen[str]:
    worker = world.spawn(refs, POLICY, gate=True)
    assert "ready" in read_json(worker)
    return worker


def _go(worker: subprocess.Popen[str]) -> list[dict[str, object]]:
    assert worker.stdin is not None
    worker.stdin.write("\n")
    worker.stdin.flush()
    return finish(worker)


def test_a_running_worker_stops_when_its_ledger_is_deleted(world: World) -> None:
    with world.open(0.0) as (ledger, provider):
        assert ledger.run(provider.effect("before")).done
    worker = _gated_worker(world, ["a", "b", "c"])
    _remove_ledger(world.ledger_path)
    results = _go(worker)
    assert [r.get("error") for r in results] == ["LedgerUnavailable"] * 3, results
    assert world.accepted_without_ledger() == {"before": 1}  # nothing performed
    assert not os.path.exists(world.ledger_path), "the worker made a new file"


def test_a_running_worker_stops_when_its_ledger_is_replaced(world: World, tmp_path: Path) -> None:
    worker = _gated_worker(world, ["a", "b"])
    other = tmp_path / "other.db"
    SQLiteStore(str(other), create=True).close()  # a fresh, empty ledger
    _remove_ledger(world.ledger_path)
    os.replace(other, world.ledger_path)
    results = _go(worker)
    assert [r.get("error") for r in results] == ["LedgerUnavailable"] * 2, results
    assert world.accepted_without_ledger() == {}
    with sqlite3.connect(world.ledger_path) as conn:
        assert conn.execute("SELECT count(*) FROM effects").fetchone() == (0,)


def test_a_new_worker_never_creates_a_ledger_where_the_old_one_vanished(
    world: World, tmp_path: Path
) -> None:
    """In-flight intents (executing marks) of a deleted ledger are not redone by a
    worker that opens the same path: it refuses to start on a missing ledger."""
    stuck = Policy(settle_seconds=60.0, verify_attempts=1, lease_seconds=60.0)
    with world.open(0.0, stuck) as (ledger, provider):
        provider.faults.lose_response = 1.0
        provider.faults.visibility_delay = 1e9
        result = ledger.run(provider.effect("in-flight", policy=stuck))
        assert result.status is Status.UNKNOWN
    _remove_ledger(world.ledger_path)
    worker = world.spawn(["in-flight"], POLICY, create=False)
    out, _ = worker.communicate(timeout=60)
    assert worker.returncode != 0 and out == ""
    assert world.accepted_without_ledger() == {"in-flight": 1}
    assert not os.path.exists(world.ledger_path)
    with pytest.raises(LedgerNotFound, match="actonce init"):
        SQLiteStore(world.ledger_path)


def test_a_ledger_is_created_only_when_asked(tmp_path: Path) -> None:
    path = str(tmp_path / "new.db")
    with pytest.raises(LedgerNotFound):
        SQLiteStore(path)
    assert not os.path.exists(path)
    SQLiteStore(path, create=True).close()
    SQLiteStore(path).close()  # now it exists: no create needed


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "actonce", *args], capture_output=True, text=True, timeout=60
    )


def _snapshot(path: Path) -> tuple[bytes, list[str]]:
    files = sorted(p.name for p in path.parent.iterdir())
    return (path.read_bytes() if path.exists() else b"", files)


@pytest.mark.parametrize("command", [["status"], ["list"], ["show", "abc"]])
@pytest.mark.parametrize("what", ["missing", "empty", "foreign"])
def test_read_only_commands_never_create_or_migrate(
    tmp_path: Path, command: list[str], what: str
) -> None:
    path = tmp_path / "ledger.db"
    if what == "empty":
        path.write_bytes(b"")
    elif what == "foreign":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
            conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
        conn.close()
    before = _snapshot(path)
    proc = _cli(*command, "--ledger", str(path))
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert ("no ledger" in proc.stderr) or ("not an actonce ledger" in proc.stderr), proc.stderr
    assert _snapshot(path) == before, "a read-only command changed the files"


def test_read_only_commands_never_turn_a_postgres_schema_into_a_ledger() -> None:
    import psycopg
    from tests.pgtest import drop_schema, postgres_dsn

    dsn = postgres_dsn()
    schema = f"actonce_ro_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        for command in (["status"], ["list"], ["status", "--json"]):
            proc = _cli(*command, "--ledger", f"{dsn}?schema={schema}")
            assert proc.returncode != 0, proc.stdout
            assert "no ledger" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        with psycopg.connect(dsn) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            ).fetchone()
        assert tables == (0,)
    finally:
        drop_schema(dsn, schema)


def test_writes_after_deletion_raise_in_process(tmp_path: Path) -> None:
    path = str(tmp_path / "l.db")
    store = SQLiteStore(path, create=True)
    try:
        _remove_ledger(path)
        from actonce import Ledger
        from actonce.testing import FakeProvider

        provider = FakeProvider()
        with pytest.raises(LedgerUnavailable, match="deleted"):
            Ledger(store).run(provider.effect("x"))
        assert provider.count("x") == 0
    finally:
        store.close()
