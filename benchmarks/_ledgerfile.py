"""Write a large SQLite ledger fast, for the benchmarks that read one.

The schema comes from the real migrations (``SQLiteStore(create=True)``);
the rows go in with one ``executemany`` per table in one transaction, then
the WAL is folded in and the planner's statistics made. Built under a
temporary name and renamed, so a half-built file is never used.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterable
from typing import Any

import actonce
from actonce import SQLiteStore
from actonce._store import migrations

__all__ = ["cache_folder", "write_ledger"]


def cache_folder(name: str) -> str:
    """The temporary folder where benchmark ``name`` keeps its built ledgers.

    One per checkout of actonce and per schema version: a ledger that another
    checkout (or an older commit of this one) built with another schema is
    never opened here, so a cached file can neither be too new nor too old.
    """
    where = os.path.dirname(actonce.__file__)
    version = migrations.head("sqlite")
    tag = hashlib.sha256(f"{where}|{version}".encode()).hexdigest()[:12]
    folder = os.path.join(tempfile.gettempdir(), f"actonce-bench-{name}-{tag}")
    os.makedirs(folder, exist_ok=True)
    return folder


_EFFECTS = (
    "INSERT INTO effects (key, kind, status, fence, owner, lease_expires_at, payload, "
    "payload_hash, scope, result_ref, reason, created_at, updated_at, executing_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_EVENTS = (
    "INSERT INTO events (key, type, at, fence, run_id, from_status, to_status, message, "
    "data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def write_ledger(
    path: str, effects: Iterable[tuple[Any, ...]], events: Iterable[tuple[Any, ...]] = ()
) -> float:
    """Create the ledger file at ``path`` with these rows; returns seconds spent."""
    t0 = time.perf_counter()
    tmp = path + ".building"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(tmp + suffix):
            os.remove(tmp + suffix)
    SQLiteStore(tmp, create=True).close()  # schema through the real migrations
    conn = sqlite3.connect(tmp, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(_EFFECTS, effects)
    conn.executemany(_EVENTS, events)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("ANALYZE")
    conn.close()
    os.replace(tmp, path)
    return time.perf_counter() - t0
