"""The console's state: its ledger, reviewers, sessions, holds and settings.

One :class:`Console` per process; the web app (:mod:`._app`) reads and
writes the ledger only through it, and only through the public API.
"""

from __future__ import annotations

import base64
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from actonce import Ledger, UsageError

from ._decide import Seen
from ._holds import ReviewHolds
from ._reviewers import Reviewers
from ._sessions import Sessions

__all__ = ["Console", "Settings", "key_of", "ref_of"]

_PLAIN_KEY = re.compile(r"[A-Za-z0-9._@:-]{1,512}")


def ref_of(key: str) -> str:
    """An effect key as one URL path segment (base64url behind ``~`` if it must be)."""
    if _PLAIN_KEY.fullmatch(key) and not key.startswith("~"):
        return key
    return "~" + base64.urlsafe_b64encode(key.encode("utf-8")).decode("ascii").rstrip("=")


def key_of(ref: str) -> str:
    """The effect key a path segment from :func:`ref_of` names."""
    if not ref.startswith("~"):
        return ref
    body = ref[1:]
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True)
        return raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return ref  # not ours: looked up as it is, and not found


def evidence_roots(roots: tuple[Path | str, ...]) -> tuple[Path, ...]:
    """The evidence roots, resolved; each must be a folder that exists.

    Raises:
        UsageError: a root is missing or not a folder (a mistyped root would
            silently serve no evidence at all).
    """
    resolved = tuple(Path(r).resolve() for r in roots)
    for root in resolved:
        if not root.is_dir():
            what = "is not a folder" if root.exists() else "does not exist"
            raise UsageError(f"the evidence root {root} {what}")
    return resolved


@dataclass(frozen=True, slots=True)
class Settings:
    """How one console behaves.

    Attributes:
        evidence_roots: evidence folders are served only from inside these
            (none: from wherever the ledger's events name, still only the
            known file names, still contained in the named folder).
        hold_seconds: how long a reviewer's hold lasts without renewal.
        verify_timeout: how long "verify again" waits for the verifier.
        secure_cookies: send the session cookie with ``Secure`` always (behind
            a TLS proxy); it is sent so anyway when a request came over https.
        page_size: rows per queue page.
        allowed_hosts: ``Host`` header values served (DNS rebinding guard).
    """

    evidence_roots: tuple[Path, ...] = ()
    hold_seconds: float = 600.0
    verify_timeout: float = 30.0
    secure_cookies: bool = False
    page_size: int = 50
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass
class Console:
    """One review console on one ledger."""

    ledger: Ledger
    reviewers: Reviewers
    settings: Settings = field(default_factory=Settings)
    sessions: Sessions = field(default_factory=Sessions)
    holds: ReviewHolds = field(init=False)
    seen: dict[str, Seen] = field(default_factory=dict)
    verifying: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        roots = evidence_roots(self.settings.evidence_roots)
        self.settings = replace(self.settings, evidence_roots=roots)
        self.holds = ReviewHolds(self.ledger, self.settings.hold_seconds)
