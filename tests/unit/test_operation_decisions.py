"""People's decisions move a stopped operation: each recorded, each safe to repeat.

A booking-shaped operation (hold → pay → book → notify) runs against a fake
provider on an in-memory ledger: the booking is refused, and the void of the
payment is refused or lost, so the operation stops for a person at the undo
of the payment. The decisions of ``ledger.operations`` (the public API the
console and the CLI use) then move it: retry the undo, record it undone by
hand, accept it as it stands, abandon it. Each is recorded with who, when and
on which attempt; the same decision twice answers with the existing state.
"""

from __future__ import annotations

from typing import Any

import pytest

from actonce import (
    AsyncLedger,
    Effect,
    EventType,
    InvalidTransition,
    Ledger,
    NotPerformed,
    Operation,
    OperationDecision,
    OperationState,
    Policy,
    Role,
    Status,
    Step,
    Unavailable,
    UsageError,
)
from actonce._rules.operations import Next, StepState, assess
from actonce.testing import FakeProvider, FrozenClock, MemoryStore

POLICY = Policy(settle_seconds=0, absence_authoritative=True, verify_attempts=1)
S = Status


class Trip:
    """A fake provider, a frozen clock, an in-memory ledger; faults as flags."""

    def __init__(self) -> None:
        self.clock = FrozenClock()
        self.provider = FakeProvider(clock=self.clock)
        self.ledger = Ledger(MemoryStore(), clock=self.clock)
        self.flags: dict[str, bool] = {}

    def effect(self, name: str) -> Effect:
        def perform() -> None:
            if self.flags.get(f"{name}_refused"):
                raise NotPerformed(f"the provider refused the {name}")
            self.provider.submit(name)
            if self.flags.get(f"{name}_lost"):
                self.flags[f"{name}_down"] = True  # its lookup goes down with the answer
                raise TimeoutError(f"the {name}'s answer was lost")

        def verify() -> Any:
            if self.flags.get(f"{name}_down"):
                return Unavailable(f"the {name} lookup is down")
            return self.provider.lookup(name)

        return Effect(f"k-{name}", "step", {"n": name}, perform, verify, policy=POLICY)

    def operation(self) -> Operation:
        return Operation(self.ledger, "trip", [
            Step("hold", self.effect("hold"), "compensatable", undo=self.effect("release")),
            Step("pay", self.effect("pay"), "compensatable", undo=self.effect("void")),
            Step("book", self.effect("book"), "pivot"),
            Step("notify", self.effect("notify"), "retriable"),
        ], contact="trips@agent.example")  # fmt: skip

    def stopped_at_the_void(self, how: str) -> Operation:
        """The booking is refused; the void is refused (or its answer lost)."""
        self.flags.update(book_refused=True, **{f"void_{how}": True})
        op = self.operation()
        result = op.run()
        assert result.state is OperationState.NEEDS_REVIEW
        assert [n for n, _ in result.runs] == ["hold", "pay", "book", "undo pay"]
        return op


def _decided_events(ledger: Ledger) -> int:
    return sum(1 for e in ledger.events("operation:trip") if e.type is EventType.OPERATION_DECIDED)


def test_a_refused_undo_waits_for_a_person_and_a_retry_runs_it_again() -> None:
    t = Trip()
    op = t.stopped_at_the_void("refused")
    view = t.ledger.operations.get("trip")
    assert (view.state, view.step, view.undo, view.attempt) == (
        OperationState.NEEDS_REVIEW, "pay", True, 1,
    )  # fmt: skip
    assert view.choices == (
        OperationDecision.RETRY_UNDO, OperationDecision.UNDONE_BY_HAND,
        OperationDecision.ACCEPT, OperationDecision.ABANDON,
    )  # fmt: skip
    assert view.since == t.ledger.get("k-void").updated_at  # type: ignore[union-attr]
    assert [v.op_id for v in t.ledger.operations.in_review()] == ["trip"]
    assert t.ledger.operations.due() == []  # nothing runs by itself: a person decides

    t.clock.advance(5)
    after = t.ledger.operations.decide(
        "trip", "retry_undo", by="ana", reason="the provider's void queue was stuck", attempt=1
    )
    assert after.state is OperationState.COMPENSATING and after.assessment.next is Next.UNDO
    d = after.decisions[-1]
    assert (d.decision, d.by, d.step, d.attempt, d.n, d.at) == (
        OperationDecision.RETRY_UNDO, "ana", "pay", 1, 1, t.clock.now(),
    )  # fmt: skip
    assert t.ledger.operations.due() == ["trip"]  # the next pass runs it
    assert t.ledger.operations.in_review() == []
    # The same decision again: the existing state, nothing recorded twice.
    again = t.ledger.operations.decide("trip", "retry_undo", by="ana", reason="again", attempt=1)
    assert again.decisions == after.decisions and _decided_events(t.ledger) == 1

    t.flags["void_refused"] = False
    done = op.run()
    assert [n for n, _ in done.runs] == ["undo pay", "undo hold"]
    assert done.state is OperationState.COMPENSATED
    assert t.ledger.get("k-void").fence == 2  # type: ignore[union-attr]  # attempt 2 of the undo
    assert t.provider.accepted()["void"] == 1
    receipt = t.ledger.receipt("trip")
    assert receipt is not None and receipt.state is OperationState.COMPENSATED
    assert "What was done: hold (obj-1), then undone; pay (obj-2), then undone." in receipt.text
    assert "Who to contact: trips@agent.example, with the reference trip." in receipt.text
    assert receipt.data["decisions"][0]["by"] == "ana"
    # Delivered once more after it settled: still the existing state.
    late = t.ledger.operations.decide("trip", "retry_undo", by="ana", reason="late", attempt=1)
    assert late.state is OperationState.COMPENSATED and _decided_events(t.ledger) == 1


def test_an_undo_done_by_hand_counts_as_done() -> None:
    t = Trip()
    op = t.stopped_at_the_void("refused")
    view = t.ledger.operations.decide(
        "trip", OperationDecision.UNDONE_BY_HAND, by="bo", reason="voided in the bank's portal"
    )
    assert view.assessment.next is Next.UNDO and view.step == "hold"  # on to the next undo
    assert op.run().state is OperationState.COMPENSATED
    assert "void" not in t.provider.accepted()  # actonce never voided it: a person did
    receipt = t.ledger.receipt("trip")
    assert receipt is not None
    assert "pay (obj-2), then undone by hand" in receipt.text
    assert receipt.data["not_undone"] == []


def test_an_undo_in_doubt_is_settled_on_its_own_effect_first() -> None:
    t = Trip()
    t.stopped_at_the_void("lost")
    assert t.ledger.get("k-void").status is S.UNKNOWN  # type: ignore[union-attr]
    t.clock.advance(3600)  # the void's owner is long gone
    view = t.ledger.operations.decide(
        "trip", "undone_by_hand", by="ana", reason="the bank shows it voided", attempt=1
    )
    void = t.ledger.get("k-void")
    assert void is not None and void.status is S.CONFIRMED
    assert void.result_ref == "undone by hand (ana)"
    last = t.ledger.events("k-void")[-1]
    assert last.run_id == "review:ana" and last.data["reviewer"] == "ana"
    assert view.assessment.next is Next.UNDO and view.step == "hold"


def test_a_retry_of_an_undo_in_doubt_records_it_not_happened_and_still_verifies_first() -> None:
    t = Trip()
    op = t.stopped_at_the_void("lost")
    t.clock.advance(3600)
    t.ledger.operations.decide("trip", "retry_undo", by="ana", reason="not at the bank")
    assert t.ledger.get("k-void").status is S.FAILED  # type: ignore[union-attr]
    t.flags.update(void_lost=False, void_down=False)  # the lookup answers again
    done = op.run()
    assert done.state is OperationState.COMPENSATED
    # The first void had landed after all: the retry looked before acting, found
    # it, and never voided twice.
    assert t.provider.accepted()["void"] == 1
    assert not any(r.performed for name, r in done.runs if name == "undo pay")


def test_accept_and_abandon_end_it_and_only_the_same_decision_repeats() -> None:
    t = Trip()
    op = t.stopped_at_the_void("refused")
    view = t.ledger.operations.decide(
        "trip", "accept", by="bo", reason="the customer keeps the authorization", attempt=1
    )
    assert view.state is OperationState.ACCEPTED and view.choices == ()
    assert op.run().runs == ()  # nothing more happens
    receipt = t.ledger.receipt("trip")
    assert receipt is not None and receipt.state is OperationState.ACCEPTED
    assert receipt.text.splitlines()[0] == (
        "Operation trip was accepted as it stands by bo: the customer keeps the authorization."
    )
    assert "pay (obj-2), its undo was refused: it still stands" in receipt.text
    assert t.ledger.operations.decide("trip", "accept", by="bo", reason="x").state is (
        OperationState.ACCEPTED
    )
    with pytest.raises(InvalidTransition, match="does not apply"):
        t.ledger.operations.decide("trip", "abandon", by="ana", reason="no")
    assert _decided_events(t.ledger) == 1

    other = Trip()
    other.stopped_at_the_void("refused")
    gone = other.ledger.operations.decide("trip", "abandon", by="ana", reason="fraud suspected")
    assert gone.state is OperationState.ABANDONED
    assert gone.reason == "abandoned by ana: fraud suspected"


def test_a_decision_is_refused_on_an_attempt_it_did_not_see() -> None:
    t = Trip()
    t.stopped_at_the_void("refused")
    ops = t.ledger.operations
    with pytest.raises(InvalidTransition, match="look again"):
        ops.decide("trip", "retry_undo", by="ana", reason="x", attempt=2)
    with pytest.raises(InvalidTransition, match="stands at pay, not at hold"):
        ops.decide("trip", "retry_undo", by="ana", reason="x", step="hold")
    with pytest.raises(InvalidTransition, match="does not apply"):
        ops.decide("trip", "withdraw", by="ana", reason="x")  # not on its way any more
    with pytest.raises(UsageError, match="one of"):
        ops.decide("trip", "redo", by="ana", reason="x")
    with pytest.raises(UsageError, match="a reason"):
        ops.decide("trip", "accept", by="ana", reason=" ")
    with pytest.raises(UsageError, match="no operation"):
        ops.decide("nope", "accept", by="ana", reason="x")
    assert _decided_events(t.ledger) == 0


def test_one_step_compensated_and_one_unknown_stops_for_review_at_the_unknown_step() -> None:
    # Issue 23's pin: never "compensated" while a step's outcome is in doubt.
    for withdrawn in (False, True):
        hold = StepState("hold", Role.COMPENSATABLE, S.CONFIRMED, 1, 1, S.CONFIRMED, True)
        pay = StepState("pay", Role.COMPENSATABLE, S.UNKNOWN, 1, 1, None, True)
        book = StepState("book", Role.PIVOT)
        decisions = ()
        if withdrawn:
            from actonce import DecisionRecord

            decisions = (DecisionRecord(OperationDecision.WITHDRAW, "system", 1.0, "x"),)  # type: ignore[assignment]
        a = assess([hold, pay, book], decisions=decisions)
        assert (a.state, a.next, a.index) == (OperationState.NEEDS_REVIEW, Next.STOP, 1)
        assert not a.undo and "pay is unknown" in a.reason
        # The same with the steps' order turned: the unknown one is the one named.
        first = StepState("pay", Role.COMPENSATABLE, S.UNKNOWN, 1, 1, None, True)
        second = StepState("hold", Role.COMPENSATABLE, S.CONFIRMED, 1, 1, S.CONFIRMED, True)
        a = assess([first, second, book], decisions=decisions)
        assert (a.state, a.index) == (OperationState.NEEDS_REVIEW, 0)


async def test_the_async_ledger_has_the_same_names() -> None:
    t = Trip()
    t.stopped_at_the_void("refused")
    ledger = AsyncLedger(t.ledger.store, clock=t.clock)
    view = await ledger.operations.get("trip")
    assert view.in_review and [v.op_id for v in await ledger.operations.in_review()] == ["trip"]
    done = await ledger.operations.decide("trip", "undone_by_hand", by="ana", reason="by phone")
    assert done.assessment.next is Next.UNDO and await ledger.operations.due() == ["trip"]
    receipt = await ledger.receipt("trip")
    assert receipt is not None and receipt.data["decisions"][0]["decision"] == "undone_by_hand"
