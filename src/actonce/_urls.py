"""Ledger URLs: which store a string names.

- ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``,
  ``sqlite:///:memory:``, or a plain file path: the embedded SQLite store.
- ``postgresql://user@host:port/db`` (or ``postgres://``): the PostgreSQL
  store (``pip install 'actonce[postgres]'``).
- ``memory://``: the in-memory store (tests, trying things out).

With no URL, ``ACTONCE_LEDGER`` is used, else ``actonce.db`` in the current
folder.
"""

from __future__ import annotations

import os
from typing import Any

from ._errors import BadLedgerURL

__all__ = ["DEFAULT_LEDGER", "open_store", "resolve_url"]

DEFAULT_LEDGER = "sqlite:///actonce.db"


def resolve_url(url: str | None) -> str:
    """The URL that ``url`` (or the environment, or the default) stands for."""
    return url or os.environ.get("ACTONCE_LEDGER") or DEFAULT_LEDGER


def open_store(url: str | None = None, *, prefer_async: bool = False) -> Any:
    """Open the store ``url`` names (a ``Store``, or an ``AsyncStore`` when asked).

    Raises:
        BadLedgerURL: malformed URL or unknown scheme.
        LedgerUnavailable: the ledger cannot be opened.
        SchemaTooNew: the ledger was written by a newer actonce.
    """
    url = resolve_url(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        if not url.strip():
            raise BadLedgerURL("empty ledger URL")
        from ._sqlite import SQLiteStore

        return SQLiteStore(url)
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise BadLedgerURL(
                f"malformed SQLite URL {url!r}: use sqlite:///relative.db or sqlite:////abs/path.db"
            )
        from ._sqlite import SQLiteStore

        return SQLiteStore(rest[1:])
    if scheme == "memory":
        from ._store import MemoryStore

        return MemoryStore()
    if scheme in ("postgresql", "postgres"):
        try:
            from . import _postgres  # type: ignore[attr-defined,unused-ignore]
        except ImportError as exc:
            raise BadLedgerURL(
                "PostgreSQL ledgers need psycopg: pip install 'actonce[postgres]'"
            ) from exc
        return _postgres.open_postgres(url, prefer_async=prefer_async)
    raise BadLedgerURL(f"unknown ledger scheme {scheme!r} in {url!r} (sqlite, postgresql, memory)")
