"""Multi-step operations: the derived-state table, compensation, receipts.

The table is walked exhaustively for a four-step operation (hold → pay →
book → notify): every combination of step and undo statuses is assessed and
checked against the rules (verify before compensate, forward only after the
pivot, doubt stops everything). Then whole operations run against a fake
provider through the ledger.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from actonce import (
    Effect,
    Ledger,
    NotPerformed,
    Operation,
    OperationState,
    Outcome,
    Policy,
    Role,
    Status,
    Step,
    Unavailable,
    effect_key,
    provider_retry,
)
from actonce._rules.operations import Next, StepState, assess
from actonce.testing import FakeProvider, FrozenClock, MemoryStore

S = Status
STATUSES = (None, S.CLAIMED, S.EXECUTING, S.UNKNOWN, S.NEEDS_REVIEW, S.CONFIRMED, S.FAILED)
UNDOS = (None, S.EXECUTING, S.UNKNOWN, S.CONFIRMED, S.FAILED)
ROLES = (Role.COMPENSATABLE, Role.COMPENSATABLE, Role.PIVOT, Role.RETRIABLE)
NAMES = ("hold", "pay", "book", "notify")


def _combos() -> list[list[StepState]]:
    out = []
    for statuses in itertools.product(STATUSES, repeat=4):
        undos_for = [UNDOS if i < 2 else (None,) for i in range(4)]
        for undos in itertools.product(*undos_for):
            out.append(
                [
                    StepState(
                        NAMES[i], ROLES[i], statuses[i], 1 if statuses[i] else 0, 1, undos[i], i < 2
                    )
                    for i in range(4)
                ]
            )
    return out


COMBOS = _combos()


def test_the_table_is_total_and_keeps_its_rules() -> None:
    assert len(COMBOS) > 50_000
    for steps in COMBOS:
        a = assess(steps)
        if a.next is Next.UNDO:
            # Verify before compensate: only a confirmed step is ever undone, never after the pivot.
            assert a.index is not None and steps[a.index].status is S.CONFIRMED
            assert steps[2].status is not S.CONFIRMED
        if a.next is Next.RUN and a.index is not None and a.index <= 2:
            # A step runs only after every step before it is verified.
            assert all(s.status is S.CONFIRMED for s in steps[: a.index])
            assert all(s.undo is None for s in steps)
        if any(s.status in (S.UNKNOWN, S.NEEDS_REVIEW) for s in steps[:3]):
            assert a.next in (Next.STOP, Next.WAIT, Next.UNDO) or a.state is OperationState.COMPLETE
        if a.next is Next.UNDO:
            later_doubt = [s for s in steps[: a.index] if s.status in (S.UNKNOWN, S.NEEDS_REVIEW)]
            assert not later_doubt or a.index is not None
        done = all(s.status is S.CONFIRMED for s in steps[:3])
        if done and all(s.undo is None for s in steps):
            assert a.state is OperationState.COMPLETE  # a notification never downgrades it


def test_an_undo_in_doubt_or_refused_goes_to_review() -> None:
    base = [
        StepState(n, r, S.CONFIRMED, 1, 1, None, i < 2)
        for i, (n, r) in enumerate(zip(NAMES, ROLES, strict=True))
    ]
    base[2] = StepState("book", Role.PIVOT, S.FAILED, 1)
    for undo in (S.UNKNOWN, S.NEEDS_REVIEW, S.FAILED):
        steps = list(base)
        steps[1] = StepState("pay", Role.COMPENSATABLE, S.CONFIRMED, 1, 1, undo, True)
        assert assess(steps).state is OperationState.NEEDS_REVIEW


# --- whole operations -----------------------------------------------------------------------

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)


class World:
    def __init__(self) -> None:
        self.clock = FrozenClock()
        self.provider = FakeProvider(clock=self.clock)
        self.ledger = Ledger(MemoryStore(), clock=self.clock)
        self.book_fails = False
        self.pay_lost = False
        self.notify_drops = 0
        self.paid = False

    def effect(self, ref: str, *, refuse: bool = False, lose: bool = False) -> Effect:
        def perform() -> None:
            if refuse and self.book_fails:
                raise NotPerformed("the provider refused the booking: no rooms left")
            if ref.endswith("-notify") and self.notify_drops:
                self.notify_drops -= 1
                raise NotPerformed("the message was refused by the gateway")
            self.provider.submit(ref)
            if lose and self.pay_lost:
                self.paid = True
                raise TimeoutError("the payment's answer was lost")

        def verify() -> Any:
            if lose and self.pay_lost and self.paid:
                return Unavailable("the payment provider's lookup is down")
            return self.provider.lookup(ref)

        return Effect(
            effect_key(tenant="t", actor="agent", kind="step", object=ref, operation="do"),
            "step",
            {"ref": ref, "card_number": "4111111111111111"},
            perform,
            verify,
            policy=POLICY,
        )

    def operation(self, op: str) -> Operation:
        return Operation(
            self.ledger,
            op,
            [
                Step("hold", self.effect(f"{op}-hold"), "compensatable",
                     undo=self.effect(f"{op}-hold-release")),
                Step("pay", self.effect(f"{op}-pay", lose=True), "compensatable",
                     undo=self.effect(f"{op}-pay-void")),
                Step("book", self.effect(f"{op}-book", refuse=True), "pivot"),
                Step("notify", self.effect(f"{op}-notify"), "retriable", attempts=3),
            ],
        )  # fmt: skip


def test_a_whole_operation_completes_once_and_writes_its_receipt() -> None:
    w = World()
    op = w.operation("trip-1")
    result = op.run()
    assert result.state is OperationState.COMPLETE
    assert [n for n, _ in result.runs] == ["hold", "pay", "book", "notify"]
    again = op.run()
    assert again.runs == () and again.state is OperationState.COMPLETE
    assert w.provider.accepted() == {f"trip-1-{s}": 1 for s in ("hold", "pay", "book", "notify")}
    receipt = w.ledger.receipt("trip-1")
    assert receipt is not None and receipt.state is OperationState.COMPLETE
    assert "How we know" in receipt.text and receipt.data["notification"] == "delivered"
    dump = json.dumps(receipt.data) + receipt.text
    assert "4111111111111111" not in dump  # secret-free: through the allowlist


def test_partial_success_is_compensated_newest_first_and_said_so() -> None:
    w = World()
    w.book_fails = True
    result = w.operation("trip-2").run()
    assert result.state is OperationState.COMPENSATED
    assert [n for n, _ in result.runs] == ["hold", "pay", "book", "undo pay", "undo hold"]
    truth = w.provider.accepted()
    assert "trip-2-book" not in truth and truth["trip-2-pay-void"] == 1
    receipt = w.ledger.receipt("trip-2")
    assert receipt is not None and "What was not done: book (it did not happen)." in receipt.text
    assert "What was done: hold (obj-1), then undone; pay (obj-2), then undone." in receipt.text


def test_a_payment_in_doubt_is_never_compensated_blindly() -> None:
    w = World()
    w.pay_lost = True  # the answer is lost and the lookup is down: the payment is in doubt
    result = w.operation("trip-3").run()
    assert result.state is OperationState.NEEDS_REVIEW
    assert "trip-3-pay-void" not in w.provider.accepted()
    assert "trip-3-book" not in w.provider.accepted()
    receipt = w.ledger.receipt("trip-3")
    assert receipt is not None and "Still uncertain: pay" in receipt.text


def test_a_dropped_notification_keeps_the_booking_verified_and_is_retried_alone() -> None:
    w = World()
    w.notify_drops = 1
    result = w.operation("trip-4").run()
    assert result.state is OperationState.COMPLETE
    receipt = w.ledger.receipt("trip-4")
    assert receipt is not None and "notify message is not delivered yet" in receipt.text
    early = w.operation("trip-4").run()  # its backoff has not passed: nothing is sent
    assert early.runs == () and w.ledger.operations.due() == []
    w.clock.advance(30)
    assert w.ledger.operations.due() == ["trip-4"]
    again = w.operation("trip-4").run()
    assert [n for n, _ in again.runs] == ["notify"] and again.runs[0][
        1
    ].outcome is Outcome.COMPLETED
    assert w.provider.accepted()["trip-4-book"] == 1
    assert w.provider.accepted()["trip-4-notify"] == 1
    assert w.ledger.receipt("trip-4").data["notification"] == "delivered"  # type: ignore[union-attr]


def test_an_operations_steps_never_change() -> None:
    w = World()
    w.operation("trip-5").run()
    other = Operation(w.ledger, "trip-5", [Step("hold", w.effect("other"), "pivot")])
    with pytest.raises(Exception, match="other steps"):
        other.run()


def test_provider_retry_keeps_one_object_per_idempotency_key() -> None:
    made: dict[str, int] = {}
    calls = {"n": 0}

    def post(key: str) -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError("HTTP 500")
        made[key] = made.get(key, 0) + 1
        return key

    assert provider_retry(lambda: post("k1"), sleep=lambda _s: None) == "k1"
    assert calls["n"] == 3 and made == {"k1": 1}


@pytest.mark.parametrize(
    ("fault", "state"),
    [
        (None, OperationState.COMPLETE),
        ("book_fails", OperationState.COMPENSATED),
        ("pay_lost", OperationState.NEEDS_REVIEW),
    ],
)
def test_a_pass_that_leaves_the_operation_standing_still_returns_its_receipt(
    fault: str | None, state: OperationState
) -> None:
    """The receipt a pass hands back is the one the ledger keeps, written by that pass."""
    w = World()
    if fault is not None:
        setattr(w, fault, True)
    result = w.operation("trip-r").run()
    assert result.state is state
    assert result.receipt is not None and result.receipt == w.ledger.receipt("trip-r")
    assert result.receipt.state is state
