"""Budgets that count only verified work (DESIGN invariant 6, seed 000 §8).

Theory of operation. A **pool** has a limit per **window** (10 publications a
day, 500 EUR a week) in one unit (a count, or a currency). An effect draws on
one or more pools — text posts, image posts and threads each on their own
pool *and* all on a shared "original content" pool, so switching labels
cannot bypass the total. A draw is **reserved in the claim's transaction**
(refused, writing nothing, if any pool it draws on would go over its limit),
**consumed** when the effect is confirmed, **released** only when it is
proven not to have happened (``failed``) or abandoned, and **held** while
the effect is executing, unknown or in review: a timeout never frees a
reservation whose effect may have happened. A malformed draft that never
publishes costs nothing.

A reservation counts in the window it was made in. Windows are aligned in
UTC: hours on the hour, days at midnight, weeks on Monday 00:00 UTC (or any
number of seconds, aligned to the epoch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .errors import UsageError
from .holds import Draw
from .intents import currency_code, money
from .keys import check_text

__all__ = ["WINDOWS", "Pool", "PoolUsage", "over", "window_of"]

#: Named windows: (seconds, offset of the first window from the epoch).
WINDOWS: dict[str, tuple[float, float]] = {
    "hour": (3600.0, 0.0),
    "day": (86400.0, 0.0),
    # 1970-01-01 was a Thursday: Mondays start 4 days into the epoch.
    "week": (7 * 86400.0, 4 * 86400.0),
}


@dataclass(frozen=True, slots=True)
class Pool:
    """One budget pool.

    Attributes:
        name: the pool's name (what a ``Draw`` names).
        limit: how much may be reserved and consumed per window.
        unit: ``"count"``, or an ISO 4217 currency code for money.
        window: ``"hour"``, ``"day"``, ``"week"`` or a number of seconds.
    """

    name: str
    limit: Decimal
    unit: str = "count"
    window: str | float = "day"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > 200:
            raise UsageError("a budget pool needs a name (at most 200 characters)")
        check_text(self.name, "a budget pool's name")
        if not self.name.isprintable():
            raise UsageError(f"a budget pool's name holds a control character: {self.name!r}")
        object.__setattr__(self, "limit", money(self.limit, "a budget limit"))
        if self.unit != "count":
            currency_code(self.unit, "a pool's unit ('count' or a currency code)")
        elif self.limit is not None and self.limit != self.limit.to_integral_value():
            raise UsageError(f"a count pool's limit is a whole number, not {self.limit}")
        window_of(self.window, 0.0)

    @property
    def seconds(self) -> float:
        """The window's length in seconds."""
        return _window(self.window)[0]

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "limit": str(self.limit), "unit": self.unit,
                "window": self.window}  # fmt: skip


def _window(window: str | float) -> tuple[float, float]:
    if isinstance(window, str):
        try:
            return WINDOWS[window]
        except KeyError:
            raise UsageError(
                f"a window is one of {', '.join(WINDOWS)} or seconds, not {window!r}"
            ) from None
    ok = isinstance(window, int | float) and not isinstance(window, bool) and math.isfinite(window)
    if not ok or window <= 0:
        raise UsageError(f"a window in seconds must be a positive number, not {window!r}")
    return float(window), 0.0


def window_of(window: str | float, now: float) -> tuple[float, float]:
    """The ``[start, end)`` of the window that holds ledger time ``now``."""
    seconds, offset = _window(window)
    start = math.floor((now - offset) / seconds) * seconds + offset
    return start, start + seconds


@dataclass(frozen=True, slots=True)
class PoolUsage:
    """One pool in one window: what is reserved, consumed and left."""

    pool: Pool
    start: float
    end: float
    reserved: Decimal
    consumed: Decimal

    @property
    def used(self) -> Decimal:
        """Reserved and consumed together: what the limit is compared with."""
        return self.reserved + self.consumed

    @property
    def free(self) -> Decimal:
        """What a new draw may still take in this window."""
        return max(Decimal(0), self.pool.limit - self.used)

    def as_json(self) -> dict[str, Any]:
        return {
            **self.pool.as_json(),
            "window_start": self.start,
            "window_end": self.end,
            "reserved": str(self.reserved),
            "consumed": str(self.consumed),
            "free": str(self.free),
        }


def over(usage: PoolUsage, draw: Draw) -> str | None:
    """Why ``draw`` does not fit in ``usage`` (``None`` if it does)."""
    if usage.pool.unit == "count" and draw.amount != draw.amount.to_integral_value():
        return f"budget {usage.pool.name!r} counts whole actions, not {draw.amount}"
    if usage.used + draw.amount <= usage.pool.limit:
        return None
    unit = "" if usage.pool.unit == "count" else f" {usage.pool.unit}"
    return (
        f"budget {usage.pool.name!r} is spent: {usage.used}{unit} of {usage.pool.limit}{unit} "
        f"used this {usage.pool.window if isinstance(usage.pool.window, str) else 'window'}, "
        f"{draw.amount}{unit} more would exceed it"
    )
