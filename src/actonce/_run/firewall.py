"""The write firewall's refusals as generators of typed operations (both ledgers drive them).

:func:`record` makes a refusal storable — its URLs reduced to origin and
path and scrubbed like any text from the world, its times the ledger's —
then appends it; :func:`refusals` and :func:`counts` read them back. The
checks of what a caller may ask are made here, before any backend sees them.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from .._rules.errors import UsageError
from .._rules.firewall import RefusalReason, WriteRefusal, bare_url
from .._rules.text import world_text
from .ops import NOW, Op, StoreOp, Tick
from .reads import limit_of

__all__ = ["counts", "record", "refusals"]


@dataclass(frozen=True, slots=True)
class RefusalPut(StoreOp):
    primitive: ClassVar[str] = "refusal_put"
    refusal: WriteRefusal
    now: float


@dataclass(frozen=True, slots=True)
class RefusalList(StoreOp):
    primitive: ClassVar[str] = "refusal_list"
    actor: str | None
    limit: int
    before: int | None


@dataclass(frozen=True, slots=True)
class RefusalCounts(StoreOp):
    primitive: ClassVar[str] = "refusal_counts"


def _clean_url(url: str) -> str:
    return world_text(bare_url(url) if "://" in url else url, limit=2000)


def storable_refusal(refusal: WriteRefusal) -> WriteRefusal:
    """``refusal`` as the ledger keeps it: bare, scrubbed, bounded text."""
    if not isinstance(refusal, WriteRefusal):
        raise UsageError(f"record() takes a WriteRefusal, not {type(refusal).__name__}")
    return replace(
        refusal,
        actor=world_text(refusal.actor, limit=200),
        url=_clean_url(refusal.url),
        page=_clean_url(refusal.page),
        effect_key=None
        if refusal.effect_key is None
        else world_text(refusal.effect_key, limit=200),
    )


def record(refusal: WriteRefusal) -> Generator[Op, Any, WriteRefusal]:
    """Append one refusal at ledger time; answer it as stored (``id``, ``at``)."""
    clean = storable_refusal(refusal)
    tick: Tick = yield NOW
    stored: WriteRefusal = yield RefusalPut(clean, tick.now)
    return stored


def refusals(
    actor: str | None, limit: int, before: int | None
) -> Generator[Op, Any, list[WriteRefusal]]:
    """The newest refusals first (of one actor, or all); ``before``: an id, to page on."""
    if actor is not None and (not isinstance(actor, str) or not actor):
        raise UsageError(f"actor is a name or None, not {actor!r}")
    if before is not None and (not isinstance(before, int) or isinstance(before, bool)):
        raise UsageError(f"before is a refusal's id (a whole number), not {before!r}")
    found: list[WriteRefusal] = yield RefusalList(actor, limit_of(limit), before)
    return found


def counts() -> Generator[Op, Any, dict[str, dict[RefusalReason, int]]]:
    """Refusals per actor, per reason."""
    found: dict[str, dict[RefusalReason, int]] = yield RefusalCounts()
    return found
