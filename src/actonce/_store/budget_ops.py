"""Budget pools, written once for SQL stores (statement work).

A pool is a limit per window (``_rules.budgets``); what a gated claim draws
on it is a hold (:mod:`actonce._store.gated_ops`), so a pool's usage in a
window is read from the holds: reserved (held) and consumed. Definitions
append one event under ``budget:<pool>`` (:mod:`actonce._store.history`).
"""

from __future__ import annotations

import json
from decimal import Decimal

from .._rules.budgets import Pool, PoolUsage, window_of
from .._rules.model import EventType
from .history import budget_event_key, event_stmt
from .rows import json_text
from .stmts import Stmt, Work

__all__ = ["budget_usage", "pool_define", "pool_get", "pool_names", "pool_usage"]


def _pool(text: str) -> Pool:
    data = json.loads(text)
    return Pool(data["name"], data["limit"], data["unit"], data["window"])


def pool_define(pool: Pool, now: float, run_id: str) -> Work[Pool]:
    """Create a pool, or change its limit, unit or window (history kept)."""
    text = json_text(pool.as_json())
    yield Stmt(
        "INSERT INTO pools (name, pool, created_at, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET pool = excluded.pool, updated_at = excluded.updated_at",
        (pool.name, text, now, now),
        True,
    )
    yield event_stmt(
        budget_event_key(pool.name), EventType.BUDGET_DEFINED, now, run_id,
        f"{pool.name}: {pool.limit} {pool.unit} per {pool.window}", **pool.as_json(),
    )  # fmt: skip
    return pool


def pool_get(name: str, *, lock: bool = False) -> Work[Pool | None]:
    _, rows = yield Stmt("SELECT pool FROM pools WHERE name = ?", (name,), lock=lock)
    return _pool(rows[0][0]) if rows else None


def pool_names() -> Work[list[str]]:
    _, rows = yield Stmt("SELECT name FROM pools ORDER BY name")
    return [str(r[0]) for r in rows]


def pool_usage(name: str, now: float, *, lock: bool = False) -> Work[PoolUsage | None]:
    """A pool in the window that holds ``now``: reserved (held) and consumed."""
    pool = yield from pool_get(name, lock=lock)
    if pool is None:
        return None
    start, end = window_of(pool.window, now)
    _, rows = yield Stmt(
        "SELECT amount, status FROM holds WHERE kind = 'budget' AND ref = ? AND at >= ? "
        "AND at < ? AND status IN ('held', 'consumed')",
        (name, start, end),
    )
    reserved = sum((Decimal(str(a)) for a, st in rows if st == "held"), Decimal(0))
    consumed = sum((Decimal(str(a)) for a, st in rows if st == "consumed"), Decimal(0))
    return PoolUsage(pool, start, end, reserved, consumed)


def budget_usage(names: list[str] | None, now: float) -> Work[list[PoolUsage]]:
    """Every pool (or the named ones) in its current window."""
    wanted = names if names is not None else (yield from pool_names())
    out = []
    for name in wanted:
        usage = yield from pool_usage(name, now)
        if usage is not None:
            out.append(usage)
    return out
