"""Budget pools as generators of typed operations (both ledgers drive them)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from .._rules.budgets import Pool, PoolUsage
from .._rules.errors import UsageError
from .._rules.scrub import scrub_stored
from .ops import NOW, Op, StoreOp, Tick

__all__ = ["define", "usage"]


@dataclass(frozen=True, slots=True)
class PoolDefine(StoreOp):
    primitive: ClassVar[str] = "pool_define"
    pool: Pool
    now: float
    run_id: str


@dataclass(frozen=True, slots=True)
class BudgetUsage(StoreOp):
    primitive: ClassVar[str] = "budget_usage"
    names: list[str] | None
    now: float


def define(pool: Pool, run_id: str) -> Generator[Op, Any, Pool]:
    """Create or change a pool."""
    tick: Tick = yield NOW
    defined: Pool = yield PoolDefine(pool, tick.now, run_id)
    # Answered as the ledger keeps it (a name scrubbed), as usage() reads it.
    return replace(defined, name=scrub_stored(defined.name))


def usage(names: list[str] | None, at: float | None) -> Generator[Op, Any, list[PoolUsage]]:
    """Pools in the window that holds ``at`` (default: now); a name no pool has is an error."""
    if at is None:
        tick: Tick = yield NOW
        at = tick.now
    found: list[PoolUsage] = yield BudgetUsage(names, at)
    # A pool is kept (and looked up) under its name as the ledger stores it:
    # scrubbed, and scrubbing is idempotent, so that form is the one to find.
    stored = {u.pool.name for u in found}
    missing = sorted(n for n in set(names or ()) if scrub_stored(n) not in stored)
    if missing:
        raise UsageError(f"no budget pool {', '.join(map(repr, missing))}")
    return found
