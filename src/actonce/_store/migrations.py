"""Numbered SQL migrations, one folder per dialect.

``_store/schema/<dialect>/NNNN_name.sql``: the number is the schema version the
file brings the ledger to. The current version is the ``schema_version`` row
of ``actonce_meta`` (absent means 0: an empty database). Backends apply the
pending files in order inside one transaction and refuse a ledger whose
version is newer than the newest file they ship.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .._rules.errors import LedgerUnavailable, SchemaTooNew

__all__ = [
    "Migration",
    "check_version",
    "head",
    "migrations",
    "parse_version",
    "pending",
    "split_sqlite",
]

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One SQL file: the version it brings the schema to, and its text."""

    version: int
    name: str
    sql: str


@cache
def _load(dialect: str) -> tuple[Migration, ...]:
    return tuple(_read(dialect))


def migrations(dialect: str) -> list[Migration]:
    """All migrations shipped for ``dialect``, in order."""
    return list(_load(dialect))


def _read(dialect: str) -> list[Migration]:
    folder = resources.files("actonce") / "_store" / "schema" / dialect
    out = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            out.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    out.sort(key=lambda m: m.version)
    for expected, m in enumerate(out, start=1):
        if m.version != expected:
            raise RuntimeError(f"{dialect} migrations are not numbered 1..n: {m.name}")
    return out


def head(dialect: str) -> int:
    """The newest schema version this code understands."""
    return len(_load(dialect))


def check_version(dialect: str, current: int) -> None:
    """Raise :class:`SchemaTooNew` when ``current`` is past what we ship."""
    newest = head(dialect)
    if current > newest:
        raise SchemaTooNew(
            f"the ledger has schema version {current}, but this actonce understands "
            f"up to {newest}: upgrade actonce"
        )


def pending(dialect: str, current: int) -> list[Migration]:
    """The migrations to apply to a ledger at version ``current``."""
    check_version(dialect, current)
    return [m for m in migrations(dialect) if m.version > current]


def parse_version(value: str | None, where: str) -> int:
    """The stored ``schema_version`` as a number (a clear error if it is not one)."""
    if value is None:
        return 0
    if not (value.isascii() and value.isdigit()):  # "٣".isdigit() is True
        raise LedgerUnavailable(
            f"the ledger {where} has a corrupt schema_version {value[:40]!r}; refusing to use it"
        )
    return int(value)


def split_sqlite(sql_text: str) -> list[str]:
    """Split a SQLite migration into statements, keeping trigger bodies whole."""
    statements, buf = [], ""
    for line in sql_text.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buf:
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements
