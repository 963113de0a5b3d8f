"""Regression tests for protocol bugs that chaos runs led to, replayed deterministically.

Each test rebuilds, in one process and with a frozen clock, an interleaving
that real processes hit (or could hit): the owner is "paused" at a crash
point (the clock jumps past its lease) while another ledger reconciles.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actonce import Effect, HardStop, Ledger, Outcome, Policy, Registry, SQLiteStore, Status
from actonce.testing import FakeProvider, FrozenClock, observing


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
    store = SQLiteStore(str(tmp_path / "ledger.db"), create=True)
    worker = Ledger(store, clock=clock, registry=registry)
    other = Ledger(
        SQLiteStore(str(tmp_path / "ledger.db"), create=True), clock=clock, registry=registry
    )

    paused = []

    def hit(point: str) -> None:
        if point == "after_mark_executing" and not paused:
            paused.append(point)
            # The worker is stopped here past its lease and the settle window;
            # meanwhile reconcile proves absence and fails the mark.
            clock.advance(policy.lease_seconds + policy.settle_seconds + 1)
            report = other.reconcile()
            assert [r.status for r in report.results] == [Status.FAILED]

    with observing(hit):
        result = worker.run(provider.effect("r", policy=policy))

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


@pytest.mark.parametrize("error", [HardStop("login wall"), RuntimeError("HTTP 500")], ids=repr)
def test_a_run_never_performs_twice_after_losing_the_race_to_reconcile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    """The perform raises and nothing was committed; the owner is paused past
    its lease before it records anything, and reconcile fails the mark. The
    owner's compare-and-set then loses and it finds the key failed. It must
    end its run there, not claim the key again and perform a second time
    within the same run. Since it did perform (and an HTTP 500 does not prove
    that nothing landed), it raises the alarm: the effect goes to review
    (issue 7: a run that performed never reports "failed, replan" after being
    overtaken); a hard stop still ends the run as a hard stop.
    """
    clock = FrozenClock()
    policy = Policy(
        settle_seconds=30.0, absence_authoritative=True, verify_attempts=1, lease_seconds=600.0
    )
    provider = FakeProvider(str(tmp_path / "provider.db"), clock=clock)
    registry = Registry()
    registry.register("fake", provider.verifier, policy=policy)
    worker = Ledger(
        SQLiteStore(str(tmp_path / "ledger.db"), create=True), clock=clock, registry=registry
    )
    other = Ledger(
        SQLiteStore(str(tmp_path / "ledger.db"), create=True), clock=clock, registry=registry
    )
    calls: list[int] = []

    def perform() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise error
        provider.submit("r")

    base = provider.effect("r", policy=policy)
    effect = Effect(base.key, base.kind, base.payload, perform, base.verify, policy=policy)
    paused: list[str] = []

    def hit(point: str) -> None:
        if point == "after_perform" and not paused:
            paused.append(point)
            clock.advance(policy.lease_seconds + policy.settle_seconds + 1)
            assert [r.status for r in other.reconcile().results] == [Status.FAILED]

    with observing(hit):
        result = worker.run(effect)

    assert paused
    assert len(calls) == 1, "performed again within the same run"
    assert provider.accepted() == {}
    if isinstance(error, HardStop):
        assert result.outcome is Outcome.HARD_STOP
    else:
        assert result.outcome is Outcome.NEEDS_REVIEW
        assert "performed after being overtaken" in (result.reason or "")
    record = worker.get(result.key)
    assert record is not None and record.status is Status.NEEDS_REVIEW
    alarm = [e for e in worker.events(result.key) if "alarm" in e.data]
    assert len(alarm) == 1 and alarm[0].from_status is Status.FAILED
    assert worker.run(effect).outcome is Outcome.NEEDS_REVIEW  # a human decides, not a retry
    assert len(calls) == 1
