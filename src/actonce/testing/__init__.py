"""Test helpers, public: test your own effects against actonce's guarantees.

- :class:`FrozenClock`: time that moves only when told (``sleep`` advances
  it; ``step`` jumps ledger time only, like an NTP step).
- :class:`FakeProvider`: a pretend external system that records every
  accepted effect (its ground truth) and misbehaves on demand: lose the
  response after committing, fail before committing, delay visibility, make
  verification unavailable. Backed by SQLite, so several processes can share
  one (``FakeProvider(path)``).
- :class:`FaultyStore`: wraps a real store and makes chosen writes fail
  before they happen, or after they committed (outcome unknown).
- Named crash points: :func:`arm`, :func:`disarm`, :func:`crash_at`,
  :data:`POINTS` / :class:`CrashPoint`, :class:`SimulatedCrash` (inert
  unless armed), and :func:`observe_points` to be told of every pass.
- :class:`MemoryStore`: a store in memory.
- :data:`FAULTS` / :class:`FaultCase`: the seed-004 fault matrix, to run
  against your own effect; and a pytest plugin (``actonce.testing.plugin``,
  registered as a ``pytest11`` entry point) with fixtures for all of it. See
  docs/testing.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from .._run.points import POINTS, CrashPoint, SimulatedCrash, arm, disarm
from .._run.points import observe as observe_points
from .._store.memory import MemoryStore
from .clock import FrozenClock
from .faults import FAULTS, FaultCase, FaultReport
from .faulty import FaultyStore
from .provider import FakeProvider, Faults, ProviderError

__all__ = [
    "FAULTS",
    "POINTS",
    "CrashPoint",
    "FakeProvider",
    "FaultCase",
    "FaultReport",
    "Faults",
    "FaultyStore",
    "FrozenClock",
    "MemoryStore",
    "ProviderError",
    "SimulatedCrash",
    "arm",
    "crash_at",
    "disarm",
    "observe_points",
    "observing",
]


@contextlib.contextmanager
def crash_at(point: str, *, nth: int = 1, mode: str = "raise") -> Iterator[None]:
    """Arm ``point`` for the duration of the ``with`` block."""
    arm(point, nth=nth, mode=mode)
    try:
        yield
    finally:
        disarm()


@contextlib.contextmanager
def observing(fn: Callable[[str], None]) -> Iterator[None]:
    """Call ``fn(point)`` at every crash-point pass inside the ``with`` block."""
    previous = observe_points(fn)
    try:
        yield
    finally:
        observe_points(previous)
