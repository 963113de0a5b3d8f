"""What a claim must hold, and how a verdict settles it.

Theory of operation. Some effects may be claimed only under conditions that
other rows of the ledger decide: the intent version they were made for is
still current; an approval packet authorizes them; a budget has room for
them. A :class:`Gate` names those conditions. The store checks them **in the
same transaction as the claim** and takes a *hold* on each (the approval is
held, the budget reserved), or refuses the claim with a :class:`Refusal`
(nothing is written). The holds follow the effect's lifecycle, settled in
the transaction of the transition that decides it (:func:`settlement`):

- ``confirmed``: consumed (the approval is used up; the budget spent);
- ``failed`` (proven not to have happened) or ``abandoned``: released (the
  same approval may authorize the retry; the budget is free again);
- anything in doubt (``executing``, ``unknown``, ``needs_review``): held.
  A hold is never released by a timeout while its effect may have happened.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

from .errors import UsageError
from .facts import Fact
from .intents import IntentRef, money
from .model import Status

__all__ = ["Draw", "Gate", "Hold", "HoldKind", "HoldStatus", "Settle", "settlement"]


class HoldKind(enum.StrEnum):
    """What a hold is on. The values are the stored strings."""

    INTENT = "intent"  # the intent version (so a revision can find its open effects)
    APPROVAL = "approval"
    BUDGET = "budget"


class HoldStatus(enum.StrEnum):
    """Where one hold stands. The values are the stored strings."""

    HELD = "held"
    CONSUMED = "consumed"
    RELEASED = "released"


class Settle(enum.StrEnum):
    """What a transition does to its effect's holds."""

    CONSUME = "consume"
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class Draw:
    """A reservation against a budget pool (issue 12).

    Raises:
        UsageError: no pool name, or an amount that is not a finite,
            non-negative decimal (a negative draw would free budget).
    """

    pool: str
    amount: Decimal

    def __post_init__(self) -> None:
        if not isinstance(self.pool, str) or not self.pool.strip():
            raise UsageError("a draw names a budget pool")
        object.__setattr__(self, "amount", money(self.amount, "a draw"))


@dataclass(frozen=True, slots=True)
class Gate:
    """The conditions of one claim, checked and held in its transaction.

    Attributes:
        intent: the intent version the effect belongs to (must be current).
        approval: the packet that must authorize the commit.
        amount: what the commit will cost (checked against the approval's
            ceiling; after a refresh, the refreshed price).
        draws: budget reservations (all pools or none).
        facts: the facts refreshed right before the claim (set by the run,
            not by you). Every fact the approval relies on, the packet's
            own replaced by its refreshed observation, must be fresh at the
            claim: an approval given on a price that is no longer valid
            authorizes nothing until the price is refreshed.
    """

    intent: IntentRef | None = None
    approval: str | None = None
    amount: Decimal | None = None
    draws: tuple[Draw, ...] = ()
    facts: tuple[Fact, ...] = ()

    def __post_init__(self) -> None:
        pools = [d.pool for d in self.draws]
        twice = sorted({p for p in pools if pools.count(p) > 1})
        if twice:
            # Each draw is checked against its pool alone and held under its
            # name: two draws on one pool would be checked apart (and each
            # could fit where both do not). Name a pool once, with the sum.
            raise UsageError(
                f"a gate draws on each pool once; {', '.join(map(repr, twice))} "
                "is named more than once (draw the sum instead)"
            )

    @property
    def empty(self) -> bool:
        """True when the gate asks for nothing."""
        return self.intent is None and self.approval is None and not self.draws


class Hold(NamedTuple):
    """One hold of one claim attempt, as the ledger keeps it.

    Attributes:
        fence: the attempt (the claim's fencing token) that took it.
        kind: what it is on (the intent version, an approval, a budget).
        ref: the intent version (``trip@v2``), the packet id or the pool.
        amount: the amount reserved (a budget draw; 1 for an approval).
        status: held, consumed or released.
        at: ledger time it was taken.
        settled_at: ledger time it was consumed or released.
    """

    fence: int
    kind: HoldKind
    ref: str
    amount: Decimal
    status: HoldStatus
    at: float
    settled_at: float | None


_SETTLES = {
    Status.CONFIRMED: Settle.CONSUME,
    Status.FAILED: Settle.RELEASE,
    Status.ABANDONED: Settle.RELEASE,
}


def settlement(to: Status) -> Settle | None:
    """What a transition to ``to`` does to the effect's holds (``None``: keep them)."""
    return _SETTLES.get(to)
