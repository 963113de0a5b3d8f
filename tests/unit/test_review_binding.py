"""A reviewer's decision is bound to what the reviewer saw (the explorer's two findings).

1. ``resolve(..., attempt=N)`` is refused once the effect moved on from
   attempt N: a "not happened" about attempt 1 must not fail an attempt 2
   that landed meanwhile.
2. "Not happened" is refused while the attempt's lease is live: an alarm can
   move a live attempt to review while its owner still performs.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest

from actonce import (
    Absent,
    Effect,
    Event,
    EventType,
    InvalidTransition,
    Ledger,
    MemoryStore,
    Policy,
    Status,
    Unavailable,
    UsageError,
    effect_key,
)
from actonce.testing import FrozenClock, SimulatedCrash, crash_at

QUICK = Policy(settle_seconds=0.0, verify_attempts=1, verify_backoff=0.0, verify_after_claim=False)


def _effect(ref: str, verdicts: list[object], done: list[str]) -> Effect:
    return Effect(
        key=effect_key(tenant="t", actor="a", kind="order", object=ref, operation="create"),
        kind="order",
        payload={"ref": ref},
        perform=lambda: done.append(ref),
        verify=lambda: verdicts.pop(0) if verdicts else Unavailable("the lookup is down"),
        policy=QUICK,
    )


def test_a_decision_about_one_attempt_is_refused_on_the_next() -> None:
    clock = FrozenClock()
    store = MemoryStore()
    ledger = Ledger(store, clock=clock)
    done: list[str] = []
    effect = _effect("O-1", [Absent()], done)
    assert ledger.run(effect).status is Status.UNKNOWN  # verification unavailable
    record = ledger.get(effect.key.value)
    assert record is not None and record.fence == 1
    # The same record as a later attempt would leave it: attempt 2, in review.
    moved = replace(record, fence=2, updated_at=clock.now())
    event = Event(key=record.key, type=EventType.UNKNOWN, at=clock.now(), fence=2, run_id="r2",
                  from_status=Status.UNKNOWN, to_status=Status.UNKNOWN, message="attempt 2")  # fmt: skip
    assert store.transition((Status.UNKNOWN, 1), moved, event) is not None
    with pytest.raises(InvalidTransition, match="attempt 2 now, not the attempt 1"):
        ledger.resolve(record.key, "not_happened", reviewer="ana", reason="nothing", attempt=1)
    assert ledger.get(record.key).status is Status.UNKNOWN  # type: ignore[union-attr]
    for bad in (0, -1, True, 1.0, "2"):
        with pytest.raises(UsageError, match="attempt"):
            ledger.resolve(record.key, "abandon", reviewer="ana", reason="x", attempt=bad)  # type: ignore[arg-type]
    got = ledger.resolve(record.key, "not_happened", reviewer="ana", reason="nothing", attempt=2)
    assert got.status is Status.FAILED and got.fence == 2


def test_not_happened_waits_for_a_live_lease_to_end() -> None:
    clock = FrozenClock()
    store = MemoryStore()
    ledger = Ledger(store, clock=clock)
    done: list[str] = []
    effect = _effect("O-2", [Absent()], done)
    with crash_at("after_mark_executing"), contextlib.suppress(SimulatedCrash):
        ledger.run(effect)
    record = ledger.get(effect.key.value)
    assert record is not None and record.status is Status.EXECUTING
    assert record.lease_live(clock.now())
    # What an overtaken owner's alarm leaves: the live attempt moved to review.
    alarmed = replace(record, status=Status.NEEDS_REVIEW, updated_at=clock.now())
    event = Event(key=record.key, type=EventType.NEEDS_REVIEW, at=clock.now(), fence=1,
                  run_id="other", from_status=Status.EXECUTING, to_status=Status.NEEDS_REVIEW,
                  message="performed after being overtaken")  # fmt: skip
    assert store.transition((Status.EXECUTING, 1), alarmed, event) is not None
    with pytest.raises(InvalidTransition, match="may still be performing"):
        ledger.resolve(record.key, "not_happened", reviewer="ana", reason="not seen", attempt=1)
    assert ledger.get(record.key).status is Status.NEEDS_REVIEW  # type: ignore[union-attr]
    clock.advance(record.lease_expires_at - clock.now() + 0.001)
    got = ledger.resolve(record.key, "not_happened", reviewer="ana", reason="not seen", attempt=1)
    assert got.status is Status.FAILED


def test_happened_and_abandon_need_no_lease_to_end() -> None:
    for decision, status in (("happened", Status.CONFIRMED), ("abandon", Status.ABANDONED)):
        clock = FrozenClock()
        store = MemoryStore()
        ledger = Ledger(store, clock=clock)
        effect = _effect(f"O-{decision}", [Absent()], [])
        with crash_at("after_mark_executing"), contextlib.suppress(SimulatedCrash):
            ledger.run(effect)
        record = ledger.get(effect.key.value)
        assert record is not None
        alarmed = replace(record, status=Status.NEEDS_REVIEW, updated_at=clock.now())
        event = Event(key=record.key, type=EventType.NEEDS_REVIEW, at=clock.now(), fence=1,
                      run_id="other", from_status=Status.EXECUTING,
                      to_status=Status.NEEDS_REVIEW, message="alarm")  # fmt: skip
        assert store.transition((Status.EXECUTING, 1), alarmed, event) is not None
        got = ledger.resolve(record.key, decision, reviewer="ana", reason="seen", attempt=1)
        assert got.status is status
