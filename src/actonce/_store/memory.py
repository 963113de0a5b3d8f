"""A store in memory: for tests, for trying things out, for the explorer.

It is the SQLite store on a private in-memory database (``:memory:``): the
same atomicity, the same SQL and every domain (effects, leases, queues,
intents, approvals, holds), nothing on disk, nothing survives the process.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

from .sqlite import SQLiteStore

__all__ = ["MemoryStore"]

T = TypeVar("T")


class MemoryStore(SQLiteStore):
    """A thread-safe store in memory (a private SQLite ``:memory:`` database)."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.fail_next_write: BaseException | None = None
        """Testing hook: the next write primitive raises this instead of writing."""

    def _write(
        self, fn: Callable[[sqlite3.Connection], tuple[bool, T]], *, durable: bool = False
    ) -> T:
        exc, self.fail_next_write = self.fail_next_write, None
        if exc is not None:
            raise exc
        return super()._write(fn, durable=durable)
