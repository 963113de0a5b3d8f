"""The user's callables of one effect, and what their answers mean.

Shaped here once for both drivers (:mod:`actonce._run.drive`): a verifier's
answer becomes a verdict (:func:`as_verdict`; an exception from it is
``Unavailable``, a ``HardStop`` is a stop the protocol may act on), what a
perform returned or raised becomes the :class:`~actonce._run.ops.Performed`
answer (:func:`perform_answer`), a refresher's answer becomes facts
(:func:`refreshed`), an evidence hook's a reference (:func:`evidence_ref`).
The sync driver refuses an awaitable where it cannot await it
(:func:`no_await`); the async driver awaits what is awaitable
(:func:`maybe_await`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._rules.errors import HardStop, UsageError
from .._rules.facts import Fact
from .._rules.model import Absent, Confirmed, Unavailable, Verdict
from .clock import Clock, SystemClock
from .ops import Performed, Refreshed, Tick, Verified

__all__ = [
    "NO_CALLABLES",
    "Callables",
    "as_facts",
    "as_verdict",
    "evidence_ref",
    "maybe_await",
    "no_await",
    "perform_answer",
    "refreshed",
    "stopped",
    "tick",
    "unavailable",
]

_VERDICTS = (Confirmed, Absent, Unavailable)
_PLAIN = (bool, str, Confirmed, Absent, Unavailable)


@dataclass(frozen=True, slots=True)
class Callables:
    """The user's callables of one effect (only ``verify`` for reconcile).

    ``host`` answers ``Hook`` operations (a loop's stages: the operator's).
    """

    verify: Callable[[], Any]
    perform: Callable[[], Any] | None = None
    precondition: Callable[[], Any] | None = None
    evidence: Callable[[str], Any] | None = None
    refresh: Callable[[], Any] | None = None
    host: Any = None


NO_CALLABLES = Callables(verify=lambda: Unavailable("no verifier for this operation"))


def tick(clock: Clock) -> Tick:
    """Read the clocks once."""
    if type(clock) is SystemClock:  # the three on one reading (a subclass is asked each)
        return clock.read()
    return Tick(clock.now(), clock.monotonic(), clock.trusted())


def as_verdict(value: Any) -> Verdict:
    """A verifier's answer as a verdict; anything else is ``Unavailable``."""
    if isinstance(value, _VERDICTS):
        return value
    return Unavailable(f"verifier returned {type(value).__name__}, not a verdict")


def unavailable(exc: Exception) -> Unavailable:
    """What a verifier's exception means: the check could not be made."""
    return Unavailable(f"verifier raised {type(exc).__name__}: {exc}")


def stopped(exc: HardStop, now: Tick) -> Verified:
    """A verifier's ``HardStop``: unavailable, and a stop the protocol may act on."""
    return Verified(Unavailable(f"hard stop: {exc.reason}"), now, exc.reason)


def perform_answer(
    value: Any, error: Exception | None, started: float, clock: Clock, overtaken: bool
) -> Performed:
    """The ``Performed`` answer from what ``perform`` returned or raised."""
    source = getattr(error, "details", None) if error is not None else value
    details = None if source is None or not isinstance(source, Mapping) else dict(source)
    ended = tick(clock)
    return Performed(error, details, ended, ended.mono - started, overtaken)


def as_facts(value: Any, now: float) -> tuple[Fact, ...]:
    """A refresher's answer as facts: ``Fact`` values, or a mapping name -> value.

    Raises:
        UsageError: anything else.
    """
    if isinstance(value, Mapping):
        return tuple(Fact(str(name), v, now) for name, v in value.items())
    if isinstance(value, Fact):
        return (value,)
    try:
        facts = tuple(value)
    except TypeError:
        raise UsageError(f"a refresher returns facts, not {type(value).__name__}") from None
    if not all(isinstance(f, Fact) for f in facts):
        raise UsageError("a refresher returns Fact values or a mapping of name -> value")
    return facts


def refreshed(fn: Callable[[], Any] | None, value: Any, error: Exception | None, now: Tick) -> Any:
    """The ``Refreshed`` answer from what a refresher returned or raised."""
    if error is not None:
        return Refreshed(None, f"{type(error).__name__}: {error}", now)
    try:
        return Refreshed(as_facts(value, now.now), None, now)
    except UsageError as exc:
        return Refreshed(None, str(exc), now)


def evidence_ref(ref: Any) -> str | None:
    """An evidence hook's answer as a reference (``None`` when it gave none)."""
    return None if ref is None else str(ref)


def no_await(value: Any) -> Any:
    if value is None or isinstance(value, _PLAIN):  # the common answers, checked cheaply
        return value
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise UsageError("a callable returned an awaitable: use AsyncLedger for async effects")
    return value


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
