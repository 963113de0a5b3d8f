"""Store work written once as generators of SQL statements.

A primitive that needs several statements in one transaction yields
:class:`Stmt` values and receives each answer ``(rowcount, rows)``. SQLite
runs it inside its ``BEGIN IMMEDIATE`` transaction, PostgreSQL inside a
transaction on one connection (sync or async). Statements use ``?``
placeholders; ``lock=True`` marks a ``SELECT`` whose rows must stay locked
until the commit (PostgreSQL appends ``FOR UPDATE``; SQLite's write lock
already covers the whole file).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Answer", "Stmt", "Work", "run_sqlite"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Stmt:
    """Run ``sql`` with ``params``; answer: ``(rowcount, rows)``."""

    sql: str
    params: tuple[Any, ...] = ()
    write: bool = False
    lock: bool = False


Answer = tuple[int, list[tuple[Any, ...]]]
Work = Generator[Stmt, Answer, T]


def run_sqlite(conn: sqlite3.Connection, work: Work[T]) -> T:
    """Run ``work`` on a SQLite connection (inside the caller's transaction)."""
    answer: Any = None
    while True:
        try:
            stmt = work.send(answer)
        except StopIteration as stop:
            result: T = stop.value
            return result
        cur = conn.execute(stmt.sql, stmt.params)
        answer = (cur.rowcount, cur.fetchall() if cur.description else [])
