"""What a gated claim is refused with when what it names does not exist or does
not fit, and what settling writes when there is nothing (or a budget) to settle,
on every backend (``_store/gated_ops.py``, ``budget_ops.py``).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from actonce import Gate, IntentRef, Status
from actonce._rules.approvals import Refusal
from actonce._rules.budgets import Draw, Pool
from actonce._rules.holds import Hold, HoldKind, HoldStatus, Settle

from .test_gates import NOW, event, intent, record


@pytest.mark.parametrize(
    ("gate", "refusal"),
    [
        (Gate(approval="nope"), Refusal("no approval packet nope")),
        (
            Gate(intent=IntentRef("ghost", 1)),
            Refusal("ghost@v1 has been superseded: make the effect for the new version",
                    kind="intent"),
        ),
        (Gate(draws=(Draw("nopool", Decimal(1)),)), Refusal("no budget pool 'nopool'", kind="budget")),
        (
            Gate(draws=(Draw("p", Decimal(6)),)),
            Refusal("budget 'p' is spent: 0 of 5 used this day, 6 more would exceed it",
                    kind="budget"),
        ),
        (
            Gate(intent=intent().ref, approval="nope"),
            Refusal("no approval packet nope"),
        ),
    ],
)  # fmt: skip
def test_a_gate_naming_what_is_not_there_refuses_the_claim(
    store: Any, gate: Gate, refusal: Refusal
) -> None:
    store.intent_create(intent(), NOW, "setup")
    store.pool_define(Pool("p", Decimal("5")), NOW, "setup")
    new = record("k1")
    got = store.claim(new, None, event("k1", Status.CLAIMED), gate=gate)
    assert (got.acquired, got.record, got.refused) == (False, None, refusal)
    assert store.get("k1") is None and store.events("k1") == [] and store.holds_of("k1") == []


def test_a_refused_claim_answers_the_row_as_it_stands(store: Any) -> None:
    first = record("k1", Status.FAILED)
    assert store.claim(first, None, event("k1", Status.FAILED)).acquired
    again = replace(first, status=Status.CLAIMED, fence=2)
    got = store.claim(again, (Status.FAILED, 1), event("k1", Status.CLAIMED, 2),
                      gate=Gate(approval="nope"))  # fmt: skip
    assert (got.acquired, got.record, got.refused) == (
        False,
        first,
        Refusal("no approval packet nope"),
    )
    assert store.get("k1") == first and len(store.events("k1")) == 1


def test_a_budget_that_fits_exactly_is_held_then_consumed(store: Any) -> None:
    store.pool_define(Pool("p", Decimal("5")), NOW, "setup")
    new = record("k1")
    claim = store.claim(
        new, None, event("k1", Status.CLAIMED), gate=Gate(draws=(Draw("p", Decimal(5)),))
    )
    assert claim.acquired
    assert store.holds_of("k1") == [
        Hold(fence=1, kind=HoldKind.BUDGET, ref="p", amount=Decimal("5"), status=HoldStatus.HELD,
             at=NOW, settled_at=None),
    ]  # fmt: skip
    (usage,) = store.budget_usage(["p"], NOW)
    assert (usage.start, usage.end, usage.reserved, usage.consumed) == (
        0.0,
        86400.0,
        Decimal(5),
        Decimal(0),
    )
    done = replace(new, status=Status.CONFIRMED, updated_at=NOW + 7)
    assert store.transition((Status.CLAIMED, 1), done, event("k1", Status.CONFIRMED),
                            settle=Settle.CONSUME) == done  # fmt: skip
    (hold,) = store.holds_of("k1")
    assert (hold.status, hold.settled_at) == (HoldStatus.CONSUMED, NOW + 7)
    (usage,) = store.budget_usage(None, NOW)
    assert (usage.reserved, usage.consumed) == (Decimal(0), Decimal(5))
    # the next day's window starts empty
    (tomorrow,) = store.budget_usage(["p"], 86400.0)
    assert (tomorrow.start, tomorrow.end, tomorrow.consumed) == (86400.0, 172800.0, Decimal(0))
    assert store.budget_usage(["none"], NOW) == []


def test_settling_a_claim_without_holds_writes_only_its_transition(store: Any) -> None:
    plain = record("k2")
    assert store.claim(plain, None, event("k2", Status.CLAIMED)).acquired
    failed = replace(plain, status=Status.FAILED)
    assert store.transition((Status.CLAIMED, 1), failed, event("k2", Status.FAILED),
                            settle=Settle.RELEASE) == failed  # fmt: skip
    assert [e.type.value for e in store.events("k2")] == ["claimed", "failed"]
    assert store.holds_of("k2") == []


def test_withdrawing_a_version_that_is_not_there_changes_nothing(store: Any) -> None:
    got = store.intent_withdraw(IntentRef("ghost", 3), "ana", "x", NOW, "r")
    assert (got.applied, got.current, got.closed, got.voided, got.in_flight, got.operations) == (
        False, None, (), (), (), (),
    )  # fmt: skip
    assert store.events("intent:ghost") == []
