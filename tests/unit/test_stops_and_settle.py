"""A verifier's hard stop, and waiting within the settle window (``wait_for_settle``).

Four ways each ({memory, SQLite} x {sync, async}), against the fake provider.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from actonce import (
    EventType,
    HardStop,
    NotPerformed,
    Outcome,
    Policy,
    Status,
    Store,
    UsageError,
    Verdict,
)
from actonce.testing import FakeProvider, FrozenClock

from .conftest import Facade

REF = "post-7"


def key_of(effect: object) -> str:
    return effect.key.value  # type: ignore[attr-defined, no-any-return]


def types(store: Store, key: str) -> list[EventType]:
    return [e.type for e in store.events(key)]


# --- a hard stop seen by verification -------------------------------------------------


def test_login_wall_seen_before_the_claim_is_a_hard_stop(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    asked: list[int] = []

    def login_wall() -> Verdict:
        asked.append(1)
        raise HardStop("login wall is visible")

    effect = replace(provider.effect(REF), verify=login_wall)
    result = ledger.run(effect)
    assert result.outcome is Outcome.HARD_STOP
    assert result.reason == "hard stop: login wall is visible"
    assert not result.performed and provider.calls("submit") == 0
    assert asked == [1]  # a stop is not retried: a login wall does not pass by itself
    # Claim first: the look ran under the claim, which is given back (no record).
    assert store.get(key_of(effect)) is None
    assert types(store, key_of(effect)) == [
        EventType.CLAIMED,
        EventType.RELEASED,
        EventType.HARD_STOP,
    ]


def test_a_passing_unavailability_before_the_claim_still_defers(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    provider.faults.unavailable = 1.0  # Unavailable, not a stop: try again later
    result = ledger.run(provider.effect(REF, policy=Policy(verify_backoff=0)))
    assert result.outcome is Outcome.DEFERRED


def test_hard_stop_after_this_runs_claim_releases_it_unperformed(
    ledger: Facade, store: Store, provider: FakeProvider
) -> None:
    def decline() -> None:
        raise NotPerformed("the form was never sent")

    first = ledger.run(replace(provider.effect(REF), perform=decline))
    assert first.status is Status.FAILED and first.attempt == 1
    before = store.get(key_of(effect := provider.effect(REF)))

    def a_wall() -> Verdict:
        raise HardStop("CAPTCHA screen is visible")  # the look under the re-claim

    result = ledger.run(replace(effect, verify=a_wall))
    assert result.outcome is Outcome.HARD_STOP and not result.performed
    record = store.get(key_of(effect))
    assert record == before  # back to the failed attempt 1 it re-claimed: re-claimable
    assert provider.calls("submit") == 0
    events = store.events(key_of(effect))
    assert [e.type for e in events[-3:]] == [
        EventType.CLAIMED,
        EventType.RELEASED,
        EventType.HARD_STOP,
    ]
    assert "nothing was performed" in (events[-2].message or "")
    assert events[-1].fence == 1  # the note is under the attempt given back
    # Once the wall is gone, the next run claims again and performs once.
    done = ledger.run(provider.effect(REF))
    assert done.outcome is Outcome.COMPLETED and provider.count(REF) == 1


def test_hard_stop_after_the_perform_is_an_unknown_outcome(
    ledger: Facade, store: Store, provider: FakeProvider, clock: FrozenClock
) -> None:
    def after_the_click() -> Verdict:
        if provider.calls("submit"):
            raise HardStop("login wall is visible")
        return provider.lookup(REF)

    effect = replace(provider.effect(REF, policy=Policy(verify_backoff=0)), verify=after_the_click)
    result = ledger.run(effect)
    assert result.performed and result.outcome is Outcome.NEEDS_REVIEW
    assert result.status is Status.UNKNOWN and "hard stop: login wall" in (result.reason or "")
    # Reconcile counts the stop as Unavailable: the effect stays open, never re-performed.
    clock.advance(100)
    report = ledger.reconcile()
    assert [r.status for r in report.results] == [Status.CONFIRMED]  # the registry's verifier
    assert provider.calls("submit") == 1


def test_hard_stop_in_reconcile_holds(
    ledger: Facade, store: Store, provider: FakeProvider, clock: FrozenClock
) -> None:
    provider.faults.lose_response = 1.0
    provider.faults.visibility_delay = 1e9
    effect = provider.effect(REF, policy=Policy(verify_backoff=0, verify_attempts=1))
    assert ledger.run(effect).status is Status.UNKNOWN
    ledger.inner.registry.register("fake", lambda record: (_ for _ in ()).throw(HardStop("wall")))
    clock.advance(100)
    report = ledger.reconcile()
    assert [r.status for r in report.results] == [Status.UNKNOWN]
    assert provider.calls("submit") == 1


# --- waiting within the settle window ---------------------------------------------------


def late(provider: FakeProvider, seconds: float) -> None:
    provider.faults.lose_response = 1.0  # the perform cannot say what happened
    provider.faults.visibility_delay = seconds


def test_without_waiting_a_late_result_is_left_to_reconcile(
    ledger: Facade, provider: FakeProvider, clock: FrozenClock
) -> None:
    late(provider, 4.0)
    start = clock.monotonic()
    result = ledger.run(provider.effect(REF, policy=Policy(settle_seconds=10)))
    assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.UNKNOWN
    # 4 looks, 3 pauses of 0.25 + 0.5 + 1.0 s: run gave up after 1.75 s.
    assert clock.monotonic() - start == pytest.approx(1.75)


def test_waiting_for_settle_confirms_a_result_seen_inside_the_window(
    ledger: Facade, provider: FakeProvider, clock: FrozenClock
) -> None:
    late(provider, 4.0)
    start = clock.monotonic()
    policy = Policy(settle_seconds=10, wait_for_settle=True)
    result = ledger.run(provider.effect(REF, policy=policy))
    assert result.outcome is Outcome.COMPLETED and result.result_ref == "obj-1"
    waited = clock.monotonic() - start
    assert 4.0 <= waited <= 4.0 + policy.verify_backoff_max  # looked until it showed up
    assert provider.calls("submit") == 1


@pytest.mark.parametrize("authoritative", [False, True])
def test_waiting_never_goes_past_the_window(
    ledger: Facade, provider: FakeProvider, clock: FrozenClock, authoritative: bool
) -> None:
    late(provider, 1e9)  # never visible
    start = clock.monotonic()
    policy = Policy(settle_seconds=10, wait_for_settle=True, absence_authoritative=authoritative)
    result = ledger.run(provider.effect(REF, policy=policy))
    assert clock.monotonic() - start == pytest.approx(10.0)  # the last pause ends the window
    if authoritative:  # the provider says it is not there, and the window has passed
        assert result.outcome is Outcome.FAILED and result.status is Status.FAILED
    else:
        assert result.outcome is Outcome.NEEDS_REVIEW and result.status is Status.NEEDS_REVIEW
    assert provider.calls("submit") == 1


def test_wait_for_settle_is_validated() -> None:
    with pytest.raises(UsageError, match="wait_for_settle"):
        Policy(wait_for_settle="yes")  # type: ignore[arg-type]
