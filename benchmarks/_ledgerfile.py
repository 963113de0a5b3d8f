"""Write a large SQLite ledger fast, for the benchmarks that read one.

The schema comes from the real migrations (``SQLiteStore(create=True)``);
the rows go in with one ``executemany`` per table in one transaction, then
the WAL is folded in and the planner's statistics made. Built under a
temporary name and renamed, so a half-built file is never used.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from actonce import SQLiteStore

__all__ = ["write_ledger"]

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
