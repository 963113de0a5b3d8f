"""A run that looks before it claims and finds the result already there (seed 001).

A direct claim (``verify_after_claim=False``: the claim is the ``executing``
mark) and a gated claim (it takes holds) verify before they claim. When that
first look already sees the result, the run performs nothing and records what
it saw as the key's first record, attempt 1, with its one event: ``confirmed``
for one result, ``needs_review`` with the count and the refs for more than one
(a duplicate is never a silent success). The holds a gated claim would have
taken are never taken. Memory store, frozen clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce import (
    Confirmed,
    Effect,
    EventType,
    Ledger,
    MemoryStore,
    Outcome,
    Policy,
    Status,
)
from actonce.testing import FrozenClock

DIRECT = Policy(verify_after_claim=False, settle_seconds=0, absence_authoritative=True,
                verify_attempts=1)  # fmt: skip
TWICE = Confirmed("r/1", count=2, refs=("r/1", "r/2"))


def _run(verdict: Any, gated: bool) -> tuple[Ledger, Any, list[int]]:
    clock = FrozenClock(start=2_000.0)
    ledger = Ledger(MemoryStore(), clock=clock)
    made: list[int] = []
    gate = None
    policy = DIRECT
    if gated:
        ledger.budgets.define("rooms", 1)
        gate = ledger.budgets.gate("rooms")
        policy = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)
    effect = Effect(key="found", kind="pin", payload={"n": 1}, perform=lambda: made.append(1),
                    verify=lambda: verdict, policy=policy, gate=gate)  # fmt: skip
    return ledger, ledger.run(effect), made


@pytest.mark.parametrize("gated", [False, True], ids=["direct", "gated"])
def test_a_result_found_before_any_claim_is_recorded_confirmed(gated: bool) -> None:
    ledger, result, made = _run(Confirmed("r/1"), gated)
    assert made == []
    assert (result.outcome, result.status, result.attempt, result.performed) == (
        Outcome.SKIPPED, Status.CONFIRMED, 1, False,
    )  # fmt: skip
    assert result.result_ref == "r/1" and result.reason is None
    record = ledger.get("found")
    assert record is not None
    assert (record.status, record.fence, record.matches, record.result_ref) == (
        Status.CONFIRMED, 1, 1, "r/1",
    )  # fmt: skip
    assert (record.created_at, record.updated_at, record.reason) == (2_000.0, 2_000.0, None)
    [event] = ledger.events("found")
    assert (event.type, event.fence, event.from_status, event.to_status) == (
        EventType.CONFIRMED, 1, None, Status.CONFIRMED,
    )  # fmt: skip
    assert event.message == "result existed before any claim"
    assert event.data == {"result_ref": "r/1"}
    if gated:
        assert ledger.holds("found") == []  # no claim took a hold


@pytest.mark.parametrize("gated", [False, True], ids=["direct", "gated"])
def test_a_duplicate_found_before_any_claim_goes_to_review_with_its_count(gated: bool) -> None:
    ledger, result, made = _run(TWICE, gated)
    assert made == []
    why = "duplicate detected: 2 matching results (r/1, r/2)"
    assert (result.outcome, result.status, result.attempt, result.performed) == (
        Outcome.NEEDS_REVIEW, Status.NEEDS_REVIEW, 1, False,
    )  # fmt: skip
    assert (result.reason, result.result_ref) == (why, "r/1")
    record = ledger.get("found")
    assert record is not None
    assert (record.status, record.fence, record.matches, record.result_ref, record.reason) == (
        Status.NEEDS_REVIEW, 1, 2, "r/1", why,
    )  # fmt: skip
    [event] = ledger.events("found")
    assert (event.type, event.fence, event.from_status, event.to_status) == (
        EventType.NEEDS_REVIEW, 1, None, Status.NEEDS_REVIEW,
    )  # fmt: skip
    assert event.message == why
    assert event.data == {"duplicate": {"count": 2, "refs": ["r/1", "r/2"]}}
