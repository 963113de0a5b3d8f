"""Ledger URLs: which store a string names.

- ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``,
  ``sqlite:///:memory:``, or a plain file path: the embedded SQLite store
  (``?sync=all`` fsyncs every commit, not only the ``executing`` marks).
- ``postgresql://user@host:port/db`` (or ``postgres://``): the PostgreSQL
  store (``pip install 'actonce[postgres]'``).
- ``memory://``: the in-memory store (tests, trying things out).

With no URL, ``ACTONCE_LEDGER`` is used, else ``actonce.db`` in the current
folder. A URL in an error message is always masked (no password).
"""

from __future__ import annotations

import os
import re
from typing import Any

from .._rules.errors import BadLedgerURL, LedgerNotFound, UsageError
from .._rules.secrets import mask_url

__all__ = ["DEFAULT_LEDGER", "open_store", "resolve_url", "sqlite_path"]

DEFAULT_LEDGER = "sqlite:///actonce.db"


def resolve_url(url: str | None) -> str:
    """The URL that ``url`` (or the environment, or the default) stands for."""
    if url is not None and not isinstance(url, str):
        raise BadLedgerURL(f"a ledger URL is a string, not {type(url).__name__}")
    chosen = url or os.environ.get("ACTONCE_LEDGER") or DEFAULT_LEDGER
    if "\x00" in chosen:
        raise BadLedgerURL("a ledger URL cannot contain a NUL character")
    return chosen


def _check_plain_path(url: str) -> None:
    if not url.strip():
        raise BadLedgerURL("empty ledger URL")
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", url):
        raise BadLedgerURL(f"malformed ledger URL {mask_url(url)!r}: expected SCHEME://...")


def sqlite_path(url: str | None) -> str | None:
    """The file a SQLite URL (or plain path) names; ``None`` for other stores."""
    url = resolve_url(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        _check_plain_path(url)
        return url
    if scheme.lower() == "sqlite" and rest.startswith("/") and rest != "/":
        path = rest[1:].partition("?")[0]
        return None if path == ":memory:" else path
    return None


def open_store(
    url: str | None = None,
    *,
    create: bool = False,
    readonly: bool = False,
    prefer_async: bool = False,
) -> Any:
    """Open the store ``url`` names (a ``Store``, or an ``AsyncStore`` when asked).

    Args:
        url: the ledger URL (see the module docstring).
        create: make a new ledger when none exists there.
        readonly: never create, migrate or write.
        prefer_async: an async store where the backend has one (PostgreSQL).

    Raises:
        BadLedgerURL: malformed URL or unknown scheme.
        LedgerNotFound: no ledger there, and ``create`` was not asked (a
            ``memory://`` ledger opened read-only: it is always empty).
        LedgerUnavailable: the ledger cannot be opened.
        SchemaTooNew: the ledger was written by a newer actonce.
        UsageError: ``create``, ``readonly`` or ``prefer_async`` is not a bool.
    """
    for name, flag in (("create", create), ("readonly", readonly), ("prefer_async", prefer_async)):
        if not isinstance(flag, bool):
            raise UsageError(f"{name} must be True or False, not {flag!r:.40}")
    url = resolve_url(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        _check_plain_path(url)
        from .sqlite import SQLiteStore

        return SQLiteStore(url, create=create, readonly=readonly)
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise BadLedgerURL(
                f"malformed SQLite URL {mask_url(url)!r}: use sqlite:///relative.db "
                "or sqlite:////abs/path.db"
            )
        from .sqlite import SQLiteStore

        path, _, query = rest[1:].partition("?")
        options = dict(p.partition("=")[::2] for p in query.split("&") if p)
        unknown = set(options) - {"sync"}
        if unknown:
            raise BadLedgerURL(f"unknown SQLite URL option(s): {', '.join(sorted(unknown))}")
        return SQLiteStore(
            path, create=create, readonly=readonly, sync=options.get("sync", "marks")
        )
    if scheme == "memory":
        if readonly:
            raise LedgerNotFound(
                "a memory:// ledger lives inside one process and starts empty: "
                "there is nothing to read (give the URL of a file or a server)"
            )
        from .memory import MemoryStore

        return MemoryStore()
    if scheme in ("postgresql", "postgres"):
        try:
            from . import postgres
        except ImportError as exc:
            raise BadLedgerURL(
                "PostgreSQL ledgers need psycopg: pip install 'actonce[postgres]'"
            ) from exc
        return postgres.open_postgres(
            url, create=create, readonly=readonly, prefer_async=prefer_async
        )
    raise BadLedgerURL(
        f"unknown ledger scheme {scheme!r} in {mask_url(url)!r} (sqlite, postgresql, memory)"
    )
