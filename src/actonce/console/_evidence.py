"""Evidence files: found only where the ledger says, served only if they are there.

A browser effect's evidence is a folder (``screenshot.png``, ``page.html``,
``meta.json``, ``wire.json``) that an event of the effect names in
``data.evidence``. The console serves a file only when all of these hold:

- the event (by its sequence number) belongs to the effect asked for and
  names a folder;
- the file name is one of :data:`FILES` (no other name, no path);
- the folder, resolved (symbolic links followed), lies inside one of the
  configured evidence roots, when roots are configured;
- the file, resolved, is a regular file directly inside that folder (a
  link out of the folder is refused), and not larger than :data:`MAX_BYTES`.

Text files are scrubbed of secret-looking values before they are shown or
served; ``page.html`` is served under a sandboxing Content Security Policy
(no script, no network, no forms), as text to look at, never as a page of
this console's origin.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actonce import Event, scrub_text, scrub_url

from ._words import at, clean, shown

__all__ = ["FILES", "HTML_CSP", "MAX_BYTES", "Folder", "folder_view", "locate"]

#: The files an evidence folder may hold, and their content types.
FILES = {
    "screenshot.png": "image/png",
    "page.html": "text/html; charset=utf-8",
    "meta.json": "application/json",
    "wire.json": "application/json",
}
MAX_BYTES = 25 * 1024 * 1024
#: page.html is someone else's page: shown inert.
HTML_CSP = (
    "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'; form-action 'none'; base-uri 'none'"
)


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return not roots or any(path == r or path.is_relative_to(r) for r in roots)


def _folder(events: list[Event], seq: int, roots: tuple[Path, ...]) -> Path | None:
    for e in events:
        if e.seq != seq:
            continue
        named = e.data.get("evidence") if isinstance(e.data, dict) else None
        if not isinstance(named, str) or not named.strip() or "\x00" in named:
            return None
        try:
            folder = Path(named).resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        return folder if folder.is_dir() and _inside(folder, roots) else None
    return None


def locate(events: list[Event], seq: int, name: str, roots: tuple[Path, ...]) -> Path | None:
    """The file ``name`` of the evidence folder event ``seq`` names, if it may be served.

    ``events`` must be the history of the effect asked for.
    """
    if name not in FILES:
        return None
    folder = _folder(events, seq, roots)
    if folder is None:
        return None
    try:
        path = (folder / name).resolve(strict=True)
        ok = path.parent == folder and path.is_file() and path.stat().st_size <= MAX_BYTES
    except (OSError, RuntimeError):
        return None
    return path if ok else None


def read_text(path: Path) -> str:
    """A text file of evidence, scrubbed."""
    return scrub_text(path.read_text(encoding="utf-8", errors="replace"))


@dataclass(frozen=True, slots=True)
class Folder:
    """What an evidence folder holds, for the effect page."""

    seq: int
    label: str
    files: tuple[str, ...]
    wire: tuple[dict[str, str], ...]
    sent: str
    meta: tuple[tuple[str, str], ...]
    problem: str = ""


def _json(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None


def _wire(data: Any) -> tuple[list[dict[str, str]], str]:
    if not isinstance(data, dict) or not isinstance(data.get("wire"), list):
        return [], ""
    rows = []
    for item in data["wire"][:50]:
        if not isinstance(item, dict):
            continue
        rows.append(
            {
                "method": clean(item.get("method"), 10),
                "url": clean(scrub_url(str(item.get("url", ""))), 300),
                "at": clean(item.get("at"), 20),
                "outcome": clean(item.get("outcome"), 120),
                "took": clean(item.get("took"), 20),
            }
        )
    sent = f"{clean(data.get('sent'), 10)} sent, {clean(data.get('refused', 0), 10)} refused"
    return rows, sent


def folder_view(events: list[Event], seq: int, label: str, roots: tuple[Path, ...]) -> Folder:
    """The evidence folder of event ``seq``: its files, wire requests and metadata."""
    files = tuple(n for n in FILES if locate(events, seq, n, roots) is not None)
    if not files:
        why = "the folder is not there (moved, deleted, or outside the evidence roots)"
        return Folder(seq, label, (), (), "", (), why)
    wire, sent = _wire(_json(locate(events, seq, "wire.json", roots)))
    meta_data = shown(_json(locate(events, seq, "meta.json", roots)))
    meta: list[tuple[str, str]] = []
    if isinstance(meta_data, dict):
        for k, v in sorted(meta_data.items()):
            value = scrub_url(v) if k == "url" and isinstance(v, str) else v
            if k.endswith("_at") and isinstance(v, int | float) and not isinstance(v, bool):
                value = at(v)
            meta.append((clean(k, 60), clean(value, 300)))
    return Folder(seq, label, files, tuple(wire), sent, tuple(meta))
