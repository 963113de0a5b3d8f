"""The reads both ledgers drive: lookups and listings, as small generators.

Written once for ``Ledger`` and ``AsyncLedger`` (each runs one through its
driver in a line), with the checks of what a caller may ask (a status
filter, a page cursor, a limit) made here, before any backend sees them.
Looking an effect up by key prefix is :func:`actonce._run.review.find`.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterable
from typing import Any

from .._rules.errors import UnknownEffect, UsageError
from .._rules.keys import check_name, is_name
from .._rules.model import EffectRecord, Status
from .._rules.receipts import Receipt
from .._store.listing import Cursor
from . import operation, review
from .operator_ops import SummaryGet, SummaryList
from .ops import Counts, Events, Get, Op, OpenEffects, Select, Steps

__all__ = [
    "Cursor",
    "StatusFilter",
    "after_of",
    "counts",
    "events",
    "get",
    "limit_of",
    "one",
    "open_effects",
    "operation_of",
    "receipts",
    "select",
    "statuses",
    "summaries",
    "summary",
]

StatusFilter = Status | str | Iterable[Status | str] | None
"""One status, several, or ``None`` for all."""


def statuses(status: StatusFilter) -> tuple[Status, ...] | None:
    """The statuses a filter names (``None``: all).

    Raises:
        UsageError: an empty filter, or a value that is no status.
    """
    if status is None:
        return None
    many = [status] if isinstance(status, str) else list(status)
    if not many:
        raise UsageError("give at least one status, or None for all")
    try:
        return tuple(Status(s) for s in many)
    except ValueError:
        choices = ", ".join(s.value for s in Status)
        raise UsageError(f"a status is one of {choices}, not {status!r}") from None


def after_of(after: EffectRecord | Cursor | None) -> Cursor | None:
    """The cursor a page starts after: a record's ``(updated_at, key)``, checked."""
    if after is None:
        return None
    if isinstance(after, EffectRecord):
        return (after.updated_at, after.key)
    ok = (
        isinstance(after, tuple)
        and len(after) == 2
        and isinstance(after[0], int | float)
        and not isinstance(after[0], bool)
        and math.isfinite(after[0])
        and isinstance(after[1], str)
    )
    if not ok:
        raise UsageError(
            f"after is the last record of a page or its (updated_at, key), not {after!r}"
        )
    return (float(after[0]), after[1])


def limit_of(limit: Any) -> int:
    """A page size or a bound on a listing: a whole number from 1 to 1,000,000."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1_000_000:
        raise UsageError(f"limit must be a whole number from 1 to 1,000,000, not {limit!r}")
    return limit


# --- the generators ---------------------------------------------------------------------


def one(op: Op) -> Steps:
    return (yield op)


def get(key: str) -> Steps:
    if not isinstance(key, str):
        raise UsageError(f"a key is a string, not {type(key).__name__}")
    if not is_name(key):  # no effect can have it: not a question for the backend
        return None
    return (yield Get(key))


def open_effects(limit: int) -> Steps:
    return (yield OpenEffects(limit_of(limit)))


def select(
    status: StatusFilter, kind: str | None, limit: int, after: EffectRecord | Cursor | None
) -> Steps:
    if kind is not None:
        check_name(kind, "kind")
    return (yield Select(statuses(status), limit_of(limit), kind, after_of(after)))


def counts(status: StatusFilter) -> Steps:
    return (yield Counts(statuses(status)))


def receipts(limit: int, before: float | None) -> Generator[Op, Any, list[tuple[Receipt, float]]]:
    if before is not None and (
        isinstance(before, bool) or not isinstance(before, int | float) or before != before
    ):
        raise UsageError(f"before is a ledger time (a number), not {before!r}")
    return (yield from operation.stored_receipts(limit_of(limit), before))


def operation_of(key: str) -> Generator[Op, Any, str | None]:
    if not isinstance(key, str) or not key:
        raise UsageError(f"an effect key is a non-empty string, not {key!r}")
    return (yield from operation.operation_of(key))


def summary(run_id: str) -> Steps:
    if not isinstance(run_id, str) or not run_id:
        raise UsageError(f"a run id is a non-empty string, not {run_id!r}")
    return (yield SummaryGet(run_id))


def summaries(operator: str | None, limit: int) -> Steps:
    if operator is not None and not isinstance(operator, str):
        raise UsageError(f"an operator's name is a string, not {type(operator).__name__}")
    return (yield SummaryList(operator, limit_of(limit)))


def events(key: str) -> Steps:
    try:
        record = yield from review.find(key)
    except UnknownEffect:
        # A gated effect that was never claimed (waiting for its approval,
        # refused, paused) has a history under its full key, and no record.
        events = yield Events(key)
        if events:
            return events
        raise
    return (yield Events(record.key))
