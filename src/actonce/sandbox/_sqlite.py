"""The plumbing both sandbox databases share: one connection, one lock, transactions.

``SandboxDB`` (the posts, likes, follows and invoices) and the booking
world's tables each keep their rows in one SQLite file (or in memory),
behind one re-entrant lock, written in ``BEGIN IMMEDIATE`` transactions.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["SQLiteTables"]


class SQLiteTables:
    """A connection to ``path`` (``None``: in memory) with ``schema`` applied."""

    def __init__(self, path: str | Path | None, schema: str) -> None:
        self.path = str(path) if path is not None else ":memory:"
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        with self._lock:
            self._conn.executescript(schema)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _all(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, args).fetchall())

    def _one(self, sql: str, *args: Any) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, args).fetchone()
            return row

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
