"""Listings both SQL stores share, as statement work: pages of effects, counts.

A review queue pages through the effects of a few statuses, oldest change
first, in a ledger of any size. Two choices keep that a handful of index
lookups however large the history grows:

- **Keyset, not OFFSET.** A page starts strictly after ``(updated_at, key)``
  of the last row of the page before it, so page 1,000 costs what page 1
  costs (OFFSET would read and drop every earlier row).
- **One indexed query per status.** ``status IN (a, b) ORDER BY updated_at``
  cannot be read in order from the ``(status, updated_at)`` index: the
  planner reads every matching row and sorts them (or scans the table). One
  ordered range per status, merged here, reads at most ``limit`` rows of
  each. Counts of chosen statuses are index ranges too; counting every
  status reads the whole index.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._rules.model import EffectRecord, Status
from . import sql as q
from .rows import record_from_row
from .stmts import Stmt, Work

__all__ = ["counts", "select"]

Cursor = tuple[float, str]


def select(
    statuses: Iterable[Status] | None = None,
    limit: int = 100,
    kind: str | None = None,
    after: Cursor | None = None,
) -> Work[list[EffectRecord]]:
    """Effects of ``statuses`` (all when ``None``) and ``kind``, oldest change first.

    ``after`` is the ``(updated_at, key)`` of the last row of the previous page.
    """
    wanted: list[Status | None] = [None]
    if statuses is not None:
        wanted = [*sorted(set(statuses))]
    rows: list[tuple[Any, ...]] = []
    for status in wanted:
        where: list[str] = []
        params: list[Any] = []
        if status is not None:
            where.append("status = ?")
            params.append(status.value)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        if after is not None:
            # The plain bound lets an index on (status, updated_at) alone start
            # the range; the row value settles ties on the key.
            where.append("updated_at >= ? AND (updated_at, key) > (?, ?)")
            params.extend((after[0], after[0], after[1]))
        text = f"SELECT {q.COLS} FROM effects"
        if where:
            text += " WHERE " + " AND ".join(where)
        text += " ORDER BY updated_at, key LIMIT ?"
        _, found = yield Stmt(text, (*params, limit))
        rows.extend(found)
    records = [record_from_row(r) for r in rows]
    if len(wanted) > 1:
        records.sort(key=lambda r: (r.updated_at, r.key))
    return records[:limit]


def counts(statuses: Iterable[Status] | None = None) -> Work[dict[Status, int]]:
    """How many effects are in each status (only ``statuses``, each counted, when given)."""
    if statuses is None:
        _, rows = yield Stmt(q.COUNTS)
        return {Status(r[0]): int(r[1]) for r in rows}
    out: dict[Status, int] = {}
    for status in sorted(set(statuses)):
        _, rows = yield Stmt("SELECT count(*) FROM effects WHERE status = ?", (status.value,))
        out[status] = int(rows[0][0])
    return out
