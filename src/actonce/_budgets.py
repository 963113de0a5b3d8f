"""``Budgets``: pools with limits per window, reserved in claims, sync and async.

``ledger.budgets.define("original_content", 10, window="day")`` makes a pool;
an effect draws on pools through its gate (``gate=ledger.budgets.gate(
"text_posts", "original_content")``): the draws are reserved in the claim's
transaction, consumed on ``confirmed``, released only on proven absence or
abandonment (see :mod:`actonce._rules.budgets`).
"""

from __future__ import annotations

from decimal import Decimal

from ._effect import new_run_id
from ._rules.budgets import Pool, PoolUsage
from ._rules.errors import UsageError
from ._rules.holds import Draw, Gate
from ._rules.intents import IntentRef, money
from ._run import budgets as gen
from ._run.drive import AsyncDrives, Drives

__all__ = ["AsyncBudgets", "Budgets"]


def _gate(
    pools: tuple[str, ...],
    amount: Decimal | int | str,
    intent: IntentRef | None,
    approval: str | None,
) -> Gate:
    if not pools:
        raise UsageError("name at least one pool to draw on")
    value = money(amount, "a draw")
    assert value is not None
    if value <= 0:
        # A draw of nothing reserves nothing: the gate would hold no limit at all.
        raise UsageError(f"a gate draws a positive amount on its pools, not {value}")
    return Gate(intent, approval, None, tuple(Draw(p, value) for p in pools))


def _limit(limit: Decimal | int | str) -> Decimal:
    value = money(limit, "a budget limit")
    if value is None:
        raise UsageError("a budget pool needs a limit")
    return value


class Budgets:
    """Budget pools of a :class:`~actonce.Ledger` (``ledger.budgets``)."""

    def __init__(self, ledger: Drives) -> None:
        self._ledger = ledger

    def define(
        self,
        name: str,
        limit: Decimal | int | str,
        *,
        unit: str = "count",
        window: str | float = "day",
    ) -> Pool:
        """Create a pool, or change its limit, unit or window."""
        return self._ledger._drive(
            gen.define(Pool(name, _limit(limit), unit, window), new_run_id())
        )

    def usage(self, *names: str, at: float | None = None) -> list[PoolUsage]:
        """Pools in their current window (or the one holding ledger time ``at``)."""
        return self._ledger._drive(gen.usage(list(names) or None, at))

    @staticmethod
    def gate(
        *pools: str,
        amount: Decimal | int | str = 1,
        intent: IntentRef | None = None,
        approval: str | None = None,
    ) -> Gate:
        """A gate that draws ``amount`` on every named pool (all or none)."""
        return _gate(pools, amount, intent, approval)


class AsyncBudgets:
    """Budget pools of an :class:`~actonce.AsyncLedger`; same names as :class:`Budgets`."""

    def __init__(self, ledger: AsyncDrives) -> None:
        self._ledger = ledger

    async def define(
        self,
        name: str,
        limit: Decimal | int | str,
        *,
        unit: str = "count",
        window: str | float = "day",
    ) -> Pool:
        """See :meth:`Budgets.define`."""
        return await self._ledger._drive(
            gen.define(Pool(name, _limit(limit), unit, window), new_run_id())
        )

    async def usage(self, *names: str, at: float | None = None) -> list[PoolUsage]:
        """See :meth:`Budgets.usage`."""
        return await self._ledger._drive(gen.usage(list(names) or None, at))

    # ``Budgets.gate`` read off the class is the bare function: without
    # staticmethod it would become a method here and take the facade for a pool.
    gate = staticmethod(Budgets.gate)
