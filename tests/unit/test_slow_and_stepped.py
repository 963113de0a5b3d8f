"""Issue 7, items 1 and 2: a slow perform and a clock step are not proof of absence.

The provider keeps its own time (a clock that only moves forward, as the
provider's servers do); the ledger's clock is the one that is slow to be
read back or that steps. Each scenario runs on memory and SQLite, sync and
async (the ``ledger`` fixture), and ends with the ground truth: one object.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from actonce import Outcome, Policy, Status, Store
from actonce.testing import FakeProvider, FrozenClock

from .conftest import Facade

REF = "post-1"
AUTHORITATIVE = Policy(settle_seconds=5.0, absence_authoritative=True, lease_seconds=60.0)


@pytest.fixture
def world_clock() -> FrozenClock:
    """The provider's clock: moves on with real time, never steps."""
    return FrozenClock()


@pytest.fixture
def provider(world_clock: FrozenClock) -> Any:
    """The conftest's provider (the registry's verifier for reconcile), on its own clock."""
    p = FakeProvider(clock=world_clock)
    yield p
    p.close()


def _pass(seconds: float, *clocks: FrozenClock) -> None:
    for c in clocks:
        c.advance(seconds)


def test_the_owners_settle_window_runs_from_the_end_of_its_perform(
    ledger: Facade,
    store: Store,
    clock: FrozenClock,
    provider: FakeProvider,
    world_clock: FrozenClock,
) -> None:
    """A perform that takes longer than the settle window (a slow page before the
    request) sees its fresh object as not yet visible: that is not absence."""
    provider.faults.lose_response = 1.0
    provider.faults.visibility_delay = 1.0
    base = provider.effect(REF, policy=AUTHORITATIVE)

    def slow_perform() -> Any:
        _pass(12.0, clock, world_clock)  # the page took 12 s to load; settle is 5 s
        return base.perform()

    effect = replace(base, perform=slow_perform)
    first = ledger.run(effect)
    assert first.outcome is not Outcome.FAILED, first.reason
    assert first.status in (Status.CONFIRMED, Status.UNKNOWN)
    _pass(30.0, clock, world_clock)
    again = ledger.run(effect)
    assert provider.count(REF) == 1, "the owner's own click was taken for absence and redone"
    assert again.status is Status.CONFIRMED or ledger.reconcile() is not None
    record = store.get(first.key)
    assert record is not None and record.status in (Status.CONFIRMED, Status.UNKNOWN)


def test_a_forward_clock_step_during_the_perform_is_not_proof_of_absence(
    ledger: Facade,
    store: Store,
    clock: FrozenClock,
    provider: FakeProvider,
    world_clock: FrozenClock,
) -> None:
    """NTP steps the ledger clock an hour ahead while the request is in flight;
    the provider shows the object a few seconds later, by its own time."""
    provider.faults.lose_response = 1.0
    provider.faults.visibility_delay = 3.0
    base = provider.effect(REF, policy=AUTHORITATIVE)

    def perform_across_a_step() -> Any:
        clock.step(3600.0)
        return base.perform()

    first = ledger.run(replace(base, perform=perform_across_a_step))
    assert first.outcome is not Outcome.FAILED, first.reason
    assert clock.steps == 1
    record = store.get(first.key)
    assert record is not None and record.status is not Status.FAILED
    # Another pass right away (reconcile, a rerun): the window between
    # processes counts as not passed while the clock is distrusted.
    ledger.reconcile()
    again = ledger.run(base)
    assert not again.performed
    assert provider.count(REF) == 1
    # The provider's time reaches the object; it is confirmed, never redone.
    world_clock.advance(10.0)
    ledger.reconcile()
    done = store.get(first.key)
    assert done is not None and done.status is Status.CONFIRMED
    assert provider.count(REF) == 1


def test_reconcile_after_a_clock_step_keeps_an_unknown_effect_unknown(
    ledger: Facade, store: Store, clock: FrozenClock, provider: FakeProvider
) -> None:
    """An effect left unknown (its object not visible yet) meets a forward step
    of the ledger clock larger than the settle window: reconcile must not take
    the silence for authoritative absence and fail it (a rerun would redo it)."""
    provider.faults.lose_response = 1.0
    provider.faults.visibility_delay = 60.0
    effect = provider.effect(REF, policy=AUTHORITATIVE)
    first = ledger.run(effect)
    assert first.status is Status.UNKNOWN
    clock.step(3600.0)  # the provider's clock does not move
    report = ledger.reconcile()
    assert all(r.status is not Status.FAILED for r in report.results)
    record = store.get(first.key)
    assert record is not None and record.status is Status.UNKNOWN
    again = ledger.run(effect)
    assert not again.performed and provider.count(REF) == 1
    # Once the clock is trusted again and the provider's own time has passed,
    # the object is seen and confirmed.
    _pass(700.0, clock, provider.clock)
    ledger.reconcile()
    record = store.get(first.key)
    assert record is not None and record.status is Status.CONFIRMED
    assert provider.count(REF) == 1


def test_a_backward_step_does_not_extend_a_dead_owners_lease_forever(
    ledger: Facade, store: Store, clock: FrozenClock, provider: FakeProvider
) -> None:
    """A step backwards is distrusted too, but only for a while: after the
    distrust period, an orphan is reconciled as usual (nothing stays stuck)."""
    provider.faults.lose_response = 1.0
    provider.faults.visibility_delay = 10_000.0
    effect = provider.effect(REF, policy=AUTHORITATIVE)
    first = ledger.run(effect)
    assert first.status is Status.UNKNOWN
    clock.step(-3600.0)
    assert not clock.trusted()
    _pass(700.0, clock)  # past the distrust period, but the ledger clock is an hour behind
    assert clock.trusted()
    _pass(3700.0, clock)
    ledger.reconcile()
    record = store.get(first.key)
    # Settled by the rules again: the reconcile policy's absence is not
    # authoritative, so a person looks at it.
    assert record is not None and record.status is Status.NEEDS_REVIEW
