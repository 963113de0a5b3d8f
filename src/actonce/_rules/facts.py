"""Volatile facts: prices, availability, sessions — true for a while.

Theory of operation. Human response time makes facts go stale (seed 004):
a price quoted when the approval packet was made may have changed by the
time the approval arrives. A fact carries when it was observed, until when
it may be trusted, and where it came from. Its freshness has three states:
``fresh``, ``stale`` and ``unavailable`` (a refresh that failed is never
counted as fresh). Before a commit, the facts an approval depends on are
refreshed, and :func:`judge` decides: a refreshed price still within the
approved ceiling keeps the approval; above it (or gone: no availability, an
expired session) the approval no longer covers the commit.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .errors import UsageError
from .intents import money

__all__ = [
    "DEFAULT_WINDOWS",
    "Fact",
    "Freshness",
    "Judgement",
    "facts_from_json",
    "facts_json",
    "freshness",
    "judge",
    "relied_on",
]

#: Seconds a fact may be trusted after it was observed, per name (``*``: any other).
DEFAULT_WINDOWS: dict[str, float] = {
    "price": 300.0,
    "total": 300.0,
    "availability": 120.0,
    "session": 600.0,
    "*": 300.0,
}


class Freshness(enum.StrEnum):
    """Whether a fact may still be trusted."""

    FRESH = "fresh"
    STALE = "stale"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True, slots=True)
class Fact:
    """One observed fact.

    Attributes:
        name: ``price``, ``total``, ``availability``, ``session`` or your own.
        value: JSON-able; a price is a decimal string, availability a bool.
        observed_at: ledger time of the observation.
        valid_until: until when it may be trusted (default: a window per name).
        source: where it was read (a URL without secrets, an API name).
    """

    name: str
    value: Any
    observed_at: float
    valid_until: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise UsageError("a fact needs a name")
        for what in ("observed_at", "valid_until"):
            t = getattr(self, what)
            if t is not None and (not isinstance(t, int | float) or not math.isfinite(t)):
                raise UsageError(f"a fact's {what} must be a finite time, not {t!r}")
        if self.valid_until is None:
            window = DEFAULT_WINDOWS.get(self.name, DEFAULT_WINDOWS["*"])
            object.__setattr__(self, "valid_until", self.observed_at + window)
        if isinstance(self.value, Decimal):
            object.__setattr__(self, "value", str(self.value))

    def freshness(self, now: float) -> Freshness:
        """``fresh`` inside its validity window at ledger time ``now``, else ``stale``."""
        return freshness(self, now)

    def as_json(self) -> dict[str, Any]:
        """The fact as JSON."""
        return {
            "name": self.name,
            "value": self.value,
            "observed_at": self.observed_at,
            "valid_until": self.valid_until,
            "source": self.source,
        }


def facts_json(facts: Iterable[Fact]) -> list[dict[str, Any]]:
    """Facts as a JSON list."""
    return [f.as_json() for f in facts]


def facts_from_json(data: Iterable[Mapping[str, Any]]) -> tuple[Fact, ...]:
    """Facts from :func:`facts_json`'s shape."""
    return tuple(Fact(**dict(d)) for d in data)


def freshness(fact: Fact | None, now: float) -> Freshness:
    """``fresh`` until its window ends, ``stale`` after it, ``unavailable`` when missing.

    Only the end of the window counts: a fact a refresher stamped with its
    own clock, a little ahead of the ledger's (a database server's clock),
    is not stale for it.
    """
    if fact is None:
        return Freshness.UNAVAILABLE
    assert fact.valid_until is not None
    return Freshness.FRESH if now < fact.valid_until else Freshness.STALE


def relied_on(approved: Iterable[Fact], refreshed: Iterable[Fact]) -> dict[str, Fact]:
    """The newest observation of every fact a commit relies on, by name.

    The facts shown in the approval packet, each replaced by its refreshed
    observation when there is one, plus any fact only the refresh reported.
    """
    latest = {f.name: f for f in approved}
    latest.update({f.name: f for f in refreshed})
    return latest


@dataclass(frozen=True, slots=True)
class Judgement:
    """What refreshed facts mean for an approval.

    ``covered`` is True when the approval still covers the commit; otherwise
    ``reason`` says why (and ``amount`` is the refreshed price when known).
    ``pause`` means the commit must wait but the approval stands (an expired
    session: sign in again and resume; a refresh that could not be made).
    """

    covered: bool
    reason: str = ""
    amount: Decimal | None = None
    pause: bool = False


def judge(
    refreshed: Iterable[Fact] | None, *, ceiling: Decimal | None, currency: str | None, now: float
) -> Judgement:
    """Do the refreshed facts still fit the approved boundary?

    A refresh that failed (``None``) never counts as fresh. A ``price`` or
    ``total`` above ``ceiling`` invalidates; ``availability`` false or an
    expired ``session`` fact means no commit. A currency other than the
    approved one is not comparable: it invalidates.
    """
    if refreshed is None:
        return Judgement(False, "the facts could not be refreshed (unavailable)", pause=True)
    by_name = {f.name: f for f in refreshed}
    for name, fact in by_name.items():
        if freshness(fact, now) is not Freshness.FRESH:
            return Judgement(False, f"the refreshed fact {name!r} is not fresh", pause=True)
    amount = None
    for name in ("total", "price"):
        found = by_name.get(name)
        if found is None:
            continue
        value = found.value
        if isinstance(value, Mapping):
            cur = value.get("currency")
            value = value.get("amount")
            if currency is not None and cur not in (None, currency):
                return Judgement(False, f"the {name} is in {cur}, the approval in {currency}")
        amount = money(value, f"the refreshed {name}")
        if ceiling is not None and amount is not None and amount > ceiling:
            return Judgement(
                False, f"the refreshed {name} {amount} is above the approved {ceiling}", amount
            )
        break
    available = by_name.get("availability")
    if available is not None and available.value is not True:
        return Judgement(False, "no longer available", amount)
    session = by_name.get("session")
    if session is not None and session.value is not True:
        return Judgement(
            False, "the session expired: sign in again, then resume", amount, pause=True
        )
    return Judgement(True, "", amount)
