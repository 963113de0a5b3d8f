"""What the hardening tests share: a populated ledger, dumps of it, the CLI as a process.

A *world* is a ledger with something in it (a confirmed effect, one left
``unknown``, one in review, queued work, a held lease), so that a bad input
has something to damage. :func:`sqlite_dump` and :func:`pg_dump` are how a
test proves that nothing changed: the SQLite file's tables, or a ``pg_dump``
of one schema, before and after.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import actonce
from actonce import ActOnceError, Lease, Ledger, Policy, Status, WorkQueue
from actonce.testing import FakeProvider, Faults, FrozenClock

#: Every exception class the error tree documents (``actonce._rules.errors``),
#: as the public API exports it. A private subclass is not documented.
DOCUMENTED = frozenset(
    obj
    for name in actonce.__all__
    if isinstance(obj := getattr(actonce, name), type) and issubclass(obj, ActOnceError)
)

#: Verify once, no pause: a world is built in a few milliseconds.
QUICK = Policy(verify_backoff=0, verify_attempts=1)
#: ... and absence after the (empty) settle window sends the effect to review.
SETTLED = Policy(verify_backoff=0, verify_attempts=1, settle_seconds=0)


@dataclass
class World:
    """A populated ledger's location and the keys of what is in it."""

    url: str
    confirmed: str
    unknown: str
    review: str
    dir: Path


def populate(url: str, folder: Path) -> World:
    """Fill a new ledger at ``url`` with one effect per interesting status, work and a lease."""
    clock = FrozenClock()
    provider = FakeProvider(clock=clock)
    try:
        with Ledger.open(url, clock=clock, create=True) as ledger:
            confirmed = ledger.run(provider.effect("inv-1", kind="invoice")).key
            # Accepted but not visible yet: unknown inside the settle window, in
            # review after it (absence proves nothing for this kind).
            provider.faults = Faults(visibility_delay=1e9)
            unknown = ledger.run(provider.effect("inv-2", kind="invoice", policy=QUICK)).key
            review = ledger.run(provider.effect("inv-3", kind="invoice", policy=SETTLED)).key
            assert ledger.get(unknown).status is Status.UNKNOWN  # type: ignore[union-attr]
            assert ledger.get(review).status is Status.NEEDS_REVIEW  # type: ignore[union-attr]
            queue = WorkQueue(ledger, worker="w1", clock=clock)
            queue.put("invoice", {"ref": "inv-4"})
            queue.put("invoice", {"ref": "inv-5"})
            queue.take()
            Lease(ledger, "nightly", owner="op-1", clock=clock).__enter__()
    finally:
        provider.close()
    return World(url, confirmed, unknown, review, folder)


def with_schema(dsn: str, schema: str) -> str:
    """``dsn`` naming ``schema`` (the ledger's ``?schema=`` parameter)."""
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


def sqlite_dump(path: str | Path) -> str:
    """Every table of a SQLite ledger, its definition and its rows (bytes kept as bytes)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = bytes  # a corrupt row must not stop the comparison
    try:
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        out = [repr(row) for row in schema]
        for kind, name, _ in schema:
            if kind == b"table":
                table = name.decode()
                rows = conn.execute(f'SELECT * FROM "{table}" ORDER BY 1').fetchall()
                out += [f"{table}: {row!r}" for row in rows]
        return "\n".join(out)
    finally:
        conn.close()


def pg_dump(dsn: str, schema: str) -> str:
    """``pg_dump`` of one schema (its tables and rows), without its per-run nonce lines."""
    proc = subprocess.run(
        ["pg_dump", "--schema", schema, "--no-owner", "--dbname", dsn],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    # pg_dump 15.14+ fences its output with "\\restrict <random key>" lines.
    return "\n".join(
        line
        for line in proc.stdout.splitlines()
        if not line.startswith(("\\restrict", "\\unrestrict"))
    )


def files_in(folder: Path) -> set[str]:
    """The names in ``folder``, without SQLite's WAL and shared-memory companions."""
    return {p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm"))}


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``python -m actonce ARGS`` as a process (bytes: a test decides how to decode)."""
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "actonce", *args],
        capture_output=True,
        env=full,
        cwd=cwd,
        timeout=120,
    )
