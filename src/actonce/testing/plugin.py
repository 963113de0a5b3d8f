"""The pytest plugin of ``actonce.testing`` (registered as the ``pytest11`` entry point ``actonce``).

Installed with actonce, it gives every test suite these fixtures:

- ``actonce_clock``: a :class:`FrozenClock` (time moves only when told; the
  ledger's pauses advance it, so a run never waits for real);
- ``actonce_store``: an in-memory store;
- ``actonce_ledger``: a :class:`~actonce.Ledger` on both, with a registry of
  its own (closed after the test);
- ``actonce_provider``: a :class:`FakeProvider` on the same clock (ground
  truth + faults on demand);
- ``actonce_crash``: :func:`crash_at` (``with actonce_crash("after_perform"):``),
  disarmed after the test whatever happened;
- ``actonce_fault``: parametrized over the seed-004 fault matrix
  (:data:`~actonce.testing.faults.FAULTS`: lost response, provider 500
  before commit, unavailable verification, late visibility, crash after
  perform, resent request); point it at your own effect::

      def test_my_effect(actonce_fault, actonce_ledger):
          report = actonce_fault.run(actonce_ledger, my_effect())
          assert report.ok, report.explain()

Without installing, ``-p actonce.testing.plugin`` (or ``pytest_plugins =
["actonce.testing.plugin"]``) loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest

from .._ledger import Ledger
from .._registry import Registry
from .._run.points import disarm
from .._store.memory import MemoryStore
from . import crash_at
from .clock import FrozenClock
from .faults import FAULTS, FaultCase
from .provider import FakeProvider

__all__ = [
    "actonce_clock",
    "actonce_crash",
    "actonce_fault",
    "actonce_ledger",
    "actonce_provider",
    "actonce_store",
]


@pytest.fixture
def actonce_clock() -> FrozenClock:
    """A frozen clock: ledger time and the monotonic clock move only when told."""
    return FrozenClock()


@pytest.fixture
def actonce_store() -> Iterator[MemoryStore]:
    """A store in memory."""
    store = MemoryStore()
    yield store
    store.close()


@pytest.fixture
def actonce_ledger(actonce_store: MemoryStore, actonce_clock: FrozenClock) -> Iterator[Ledger]:
    """A ledger on the in-memory store and the frozen clock, with its own registry."""
    ledger = Ledger(actonce_store, clock=actonce_clock, registry=Registry())
    yield ledger
    ledger.close()


@pytest.fixture
def actonce_provider(actonce_clock: FrozenClock) -> Iterator[FakeProvider]:
    """A fake external system on the frozen clock."""
    provider = FakeProvider(clock=actonce_clock)
    yield provider
    provider.close()


@pytest.fixture
def actonce_crash() -> Iterator[Callable[..., AbstractContextManager[None]]]:
    """``with actonce_crash("after_mark_executing"):`` arms a crash point (``SimulatedCrash``)."""
    try:
        yield crash_at
    finally:
        disarm()


@pytest.fixture(params=FAULTS, ids=str)
def actonce_fault(request: pytest.FixtureRequest) -> FaultCase:
    """Each fault of the seed-004 matrix in turn (see ``actonce.testing.faults``)."""
    case: FaultCase = request.param
    return case
