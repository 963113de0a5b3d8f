"""Regression tests for what ``actonce chaos`` found, replayed deterministically.

Each test rebuilds, in one process and with a frozen clock, an interleaving
that the campaign hit with real processes, and names the campaign schedule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actonce import Ledger, Policy, Registry, Status, _crash
from actonce._sqlite import SQLiteStore
from actonce.testing import FakeProvider, FrozenClock


def test_a_declined_perform_does_not_stick_to_the_next_attempt_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``actonce chaos --seed 1 --first 926 --schedules 1`` (and 2295).

    A worker stopped after its executing mark past its lease; resumed, it
    declines its perform (lease expired), but reconcile has already failed
    the mark, so the run's compare-and-set loses, it finds the key failed and
    claims it again (attempt 2). That attempt performs for real, and must be
    recorded as performed: the run used to keep the earlier "declined" flag,
    marked attempt 2 failed ("nothing was performed") while the provider had
    the effect, and the next run performed it a second time.
    """
    clock = FrozenClock()
    policy = Policy(
        settle_seconds=30.0,
        absence_authoritative=True,
        verify_attempts=1,
        lease_seconds=600.0,
        verify_after_claim=True,
    )
    provider = FakeProvider(str(tmp_path / "provider.db"), clock=clock)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=policy)
    store = SQLiteStore(str(tmp_path / "ledger.db"))
    worker = Ledger(store, clock=clock, registry=registry)
    other = Ledger(SQLiteStore(str(tmp_path / "ledger.db")), clock=clock, registry=registry)

    real_hit = _crash.hit
    paused = []

    def hit(point: str) -> None:
        if point == "after_mark_executing" and not paused:
            paused.append(point)
            # The worker is stopped here past its lease and the settle window;
            # meanwhile reconcile proves absence and fails the mark.
            clock.advance(policy.lease_seconds + policy.settle_seconds + 1)
            report = other.reconcile()
            assert [r.status for r in report.results] == [Status.FAILED]
        real_hit(point)

    monkeypatch.setattr(_crash, "hit", hit)
    result = worker.run(provider.effect("r", policy=policy))
    monkeypatch.setattr(_crash, "hit", real_hit)

    assert paused
    accepted = provider.count("r")
    assert accepted == 1  # attempt 2 performed
    assert result.performed
    record = worker.get(result.key)
    assert record is not None
    assert record.status is not Status.FAILED, (
        f"the ledger says failed ({record.reason}) but the provider accepted the effect"
    )
    clock.advance(policy.lease_seconds + policy.settle_seconds + 1)
    worker.reconcile()
    worker.run(provider.effect("r", policy=policy))
    assert provider.accepted() == {"r": 1}
