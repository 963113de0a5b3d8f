"""Where evidence lives, and how long: the evidence root and its retention.

Evidence (screenshots, sanitized HTML, ``wire.json``) is written under one
**evidence root**, per session a folder of its own:

- ``$ACTONCE_EVIDENCE_DIR`` when set;
- else beside the ledger: ``<folder of the SQLite file>/actonce-evidence``
  (for ``$ACTONCE_LEDGER``, else ``./actonce.db``: ``./actonce-evidence``);
- for a ledger that is not a file (PostgreSQL, memory):
  ``./actonce-evidence``.

The ledger's events name the folders (``data["evidence"]``); :func:`prune`
reads them and deletes the folders whose newest mention is older than a
cutoff, **only inside the evidence root** (a folder outside it, or a
symbolic link, is reported and left alone). Events are never changed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from actonce import Ledger, UsageError

__all__ = [
    "DEFAULT_FOLDER",
    "PruneReport",
    "evidence_root",
    "new_session_folder",
    "parse_age",
    "prune",
]

DEFAULT_FOLDER = "actonce-evidence"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _sqlite_file(url: str) -> str | None:
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url  # a plain path
    if scheme.lower() != "sqlite" or not rest.startswith("/"):
        return None
    path = rest[1:].partition("?")[0]
    return None if path in ("", ":memory:") else path


def evidence_root(ledger_url: str | None = None) -> Path:
    """The evidence root for ``ledger_url`` (see the module), not created."""
    explicit = os.environ.get("ACTONCE_EVIDENCE_DIR")
    if explicit:
        return Path(explicit)
    url = ledger_url or os.environ.get("ACTONCE_LEDGER") or "actonce.db"
    path = _sqlite_file(url)
    base = Path(path).parent if path is not None else Path()
    return base / DEFAULT_FOLDER


def new_session_folder(root: str | Path, label: str = "session") -> Path:
    """A new folder under ``root`` for one session: ``<UTC time>-<label>-<random>``."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in label)[:40] or "session"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = Path(root) / f"{stamp}-{safe}-{secrets.token_hex(3)}"
    folder.mkdir(parents=True, exist_ok=False)
    return folder


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``2w``, ``45s`` (or plain seconds) as seconds.

    Raises:
        UsageError: not such a duration.
    """
    value = text.strip().lower()
    unit = _UNITS.get(value[-1:]) if value else None
    number = value[:-1] if unit else value
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        raise UsageError(f"not an age: {text!r} (say 30d, 12h, 90m, 2w or 45s)") from None
    if not 0 <= seconds <= _MAX_AGE:
        raise UsageError(f"an age is a duration from 0 to 1000 years, not {text!r}")
    return seconds


_MAX_AGE = 1000 * 366 * 86400.0  # older than any evidence: a typo, not an age


@dataclass
class PruneReport:
    """What :func:`prune` found and did (paths as the events name them)."""

    root: str
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # younger than the cutoff
    missing: list[str] = field(default_factory=list)  # named, already gone
    outside: list[str] = field(default_factory=list)  # outside the root (or a link): left alone
    freed_bytes: int = 0


def _size(path: Path) -> int:
    total = 0
    for base, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_size
    return total


def _inside(path: Path, root: Path) -> bool:
    try:
        resolved = path.resolve()
    except OSError:
        return False
    return resolved != root and resolved.is_relative_to(root)


def named_folders(ledger: Ledger, *, limit: int = 1_000_000) -> dict[str, float]:
    """Every evidence folder the ledger's events name, with its newest mention (ledger time)."""
    named: dict[str, float] = {}
    for record in ledger.list(limit=limit):
        for event in ledger.events(record.key):
            ref = event.data.get("evidence") if isinstance(event.data, dict) else None
            if isinstance(ref, str) and ref:
                named[ref] = max(event.at, named.get(ref, event.at))
    return named


def prune(
    ledger: Ledger,
    older_than: float,
    *,
    root: str | Path | None = None,
    dry_run: bool = False,
) -> PruneReport:
    """Delete the evidence folders named in ``ledger``'s events, older than ``older_than`` s.

    Only folders inside ``root`` (default: :func:`evidence_root` of the
    ledger's URL) are deleted; emptied session folders under the root go
    too. ``dry_run`` reports without deleting.
    """
    base = Path(root) if root is not None else evidence_root(ledger.url)
    real_root = base.resolve()
    report = PruneReport(root=str(base))
    cutoff = ledger.clock.now() - older_than
    for ref, at in sorted(named_folders(ledger).items()):
        path = Path(ref)
        if path.is_symlink() or not _inside(path, real_root):
            report.outside.append(ref)
            continue
        if not path.exists():
            report.missing.append(ref)
            continue
        if at > cutoff:
            report.kept.append(ref)
            continue
        report.freed_bytes += _size(path)
        if not dry_run:
            shutil.rmtree(path)
            _remove_empty_parents(path.resolve().parent, real_root)
        report.deleted.append(ref)
    return report


def _remove_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        folder = folder.parent
